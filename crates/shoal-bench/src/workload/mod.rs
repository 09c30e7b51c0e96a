//! The seeds' workloads (DESIGN.md §4): today the TPC-C data and input generator; the
//! `select1`, `tpcb`, `insert` and `tpcc` drivers come with the workload-suite issue.

pub mod tpcc;

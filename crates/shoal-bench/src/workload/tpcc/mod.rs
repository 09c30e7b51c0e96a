//! TPC-C (revision 5.11): the random generators its data population and its transactions'
//! inputs are defined by. Driver and schema come with the workload-suite issue.

pub mod gen;

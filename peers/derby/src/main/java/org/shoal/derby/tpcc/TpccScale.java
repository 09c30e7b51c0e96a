package org.shoal.derby.tpcc;

/**
 * The sizes of the TPC-C population (clause 4.3.3.1 at {@link #full}), as the Rust
 * workload's {@code TpccScale}.
 *
 * @param name {@code full} or {@code tiny}
 * @param items ITEM rows, and STOCK rows per warehouse
 * @param customers CUSTOMERs per district
 * @param orders ORDERs per district at load (one per customer)
 * @param newOrders of those, the last {@code newOrders} are undelivered (NEW-ORDER rows)
 */
public record TpccScale(String name, int items, int customers, int orders, int newOrders) {
    /** @return the spec's: 100,000 items; 3,000 customers and orders per district, 900 new */
    public static TpccScale full() {
        return new TpccScale("full", 100_000, 3_000, 3_000, 900);
    }

    /** @return for tests: 1,000 items; 60 customers and orders per district, 18 new */
    public static TpccScale tiny() {
        return new TpccScale("tiny", 1_000, 60, 60, 18);
    }

    /** @return orders per district the load delivered (condition 11's constant) */
    public int deliveredAtLoad() {
        return orders - newOrders;
    }
}

package org.shoal.derby.tpcc;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The inputs of the five transactions, drawn as clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1 and 2.8.1
 * say, and the transaction mixes; ported from the Rust workload's {@code input.rs}.
 */
public final class Input {
    /** Orders Stock-Level examines: the district's last 20. */
    static final int STOCK_LEVEL_ORDERS = 20;

    private Input() {}

    /** The five transactions, in counter order. */
    public enum Kind {
        /** New-Order (clause 2.4). */
        NEW_ORDER("new_order"),
        /** Payment (clause 2.5). */
        PAYMENT("payment"),
        /** Order-Status (clause 2.6). */
        ORDER_STATUS("order_status"),
        /** Delivery (clause 2.7). */
        DELIVERY("delivery"),
        /** Stock-Level (clause 2.8). */
        STOCK_LEVEL("stock_level");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /** @return the name in counters and reports ({@code mix_<name>}) */
        public String label() {
            return label;
        }
    }

    /** Which transactions a variant runs. */
    public enum Mix {
        /** Clause 5.2.3's: 45% New-Order, 43% Payment, 4% each of the others, per draw. */
        STANDARD,
        /** Only Payment. */
        PAYMENT,
        /** Only New-Order. */
        NEW_ORDER;

        /**
         * @param variant standard, payment or new-order
         * @return its mix
         */
        public static Mix of(String variant) {
            return switch (variant) {
                case "standard" -> STANDARD;
                case "payment" -> PAYMENT;
                case "new-order" -> NEW_ORDER;
                default -> throw new IllegalArgumentException("no tpcc variant " + variant);
            };
        }

        /**
         * @param r the generator
         * @return the next transaction's kind
         */
        public Kind draw(SplittableRandom r) {
            return switch (this) {
                case PAYMENT -> Kind.PAYMENT;
                case NEW_ORDER -> Kind.NEW_ORDER;
                case STANDARD -> {
                    int x = r.nextInt(100);
                    if (x < 45) {
                        yield Kind.NEW_ORDER;
                    } else if (x < 88) {
                        yield Kind.PAYMENT;
                    } else if (x < 92) {
                        yield Kind.ORDER_STATUS;
                    } else if (x < 96) {
                        yield Kind.DELIVERY;
                    }
                    yield Kind.STOCK_LEVEL;
                }
            };
        }
    }

    /**
     * What every draw needs.
     *
     * @param warehouses warehouses (at least 1)
     * @param scale the population's sizes
     * @param k NURand's constants (the run uses {@code cLastRun})
     */
    public record Env(int warehouses, TpccScale scale, Gen.NuRand k) {
        /**
         * @param r the generator
         * @return a uniform home warehouse
         */
        int warehouse(SplittableRandom r) {
            return Gen.uniform(r, 1, warehouses);
        }

        /**
         * @param r the generator
         * @param home the home warehouse
         * @return a warehouse other than {@code home} (only with more than one warehouse)
         */
        int otherWarehouse(SplittableRandom r, int home) {
            int w = Gen.uniform(r, 1, warehouses - 1);
            return w >= home ? w + 1 : w;
        }

        /**
         * @param r the generator
         * @return C_ID by NURand(1023, 1, customers)
         */
        int customerId(SplittableRandom r) {
            return Gen.nurand(r, Gen.A_C_ID, k.cId(), 1, scale.customers());
        }

        /**
         * @param r the generator
         * @return a run-time last name, NURand(255, 0, 999) limited to the names loaded
         */
        String lastName(SplittableRandom r) {
            int max = Math.min(scale.customers(), 1000) - 1;
            return Gen.lastName(Gen.nurand(r, Gen.A_C_LAST, k.cLastRun(), 0, max));
        }

        /**
         * @param r the generator
         * @return a customer, 60% by last name, 40% by number (clauses 2.5.1.2, 2.6.1.2)
         */
        Customer customer(SplittableRandom r) {
            if (Gen.uniform(r, 1, 100) <= 60) {
                return new Customer(0, lastName(r));
            }
            return new Customer(customerId(r), null);
        }
    }

    /**
     * How a transaction names its customer: by C_ID, or by C_LAST (the one at position
     * ceil(n/2) of the n customers with that name, sorted by C_FIRST).
     *
     * @param id C_ID when {@code last} is null
     * @param last C_LAST, or null
     */
    public record Customer(int id, String last) {}

    /**
     * One order line of a New-Order.
     *
     * @param iId OL_I_ID (an unused number for the rolled-back 1%)
     * @param supplyW OL_SUPPLY_W_ID
     * @param qty OL_QUANTITY, 1..=10
     */
    public record Line(int iId, int supplyW, int qty) {}

    /**
     * New-Order's input (clause 2.4.1).
     *
     * @param w W_ID
     * @param d D_ID
     * @param c C_ID
     * @param lines 5..=15 lines sorted by supply warehouse and item, so that concurrent
     *     New-Orders lock STOCK rows in one order
     * @param allLocal every line is supplied by the home warehouse
     */
    public record NewOrderIn(int w, int d, int c, List<Line> lines, boolean allLocal) {
        /**
         * Draws the input: 1% end with an unused item (and roll back); a line is supplied by
         * another warehouse with probability 1% when there is one.
         *
         * @param env the environment
         * @param r the generator
         * @return the input
         */
        public static NewOrderIn draw(Env env, SplittableRandom r) {
            int w = env.warehouse(r);
            int d = Gen.uniform(r, 1, 10);
            int c = env.customerId(r);
            int n = Gen.uniform(r, 5, 15);
            boolean rollback = Gen.uniform(r, 1, 100) == 1;
            List<Line> lines = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int item = rollback && i == n - 1
                        ? env.scale().items() + 1
                        : Gen.nurand(r, Gen.A_OL_I_ID, env.k().olIId(), 1, env.scale().items());
                int supply = env.warehouses() > 1 && Gen.uniform(r, 1, 100) == 1
                        ? env.otherWarehouse(r, w) : w;
                lines.add(new Line(item, supply, Gen.uniform(r, 1, 10)));
            }
            lines.sort(Comparator.comparingInt(Line::supplyW).thenComparingInt(Line::iId));
            boolean allLocal = lines.stream().allMatch(l -> l.supplyW() == w);
            return new NewOrderIn(w, d, c, lines, allLocal);
        }
    }

    /**
     * Payment's input (clause 2.5.1).
     *
     * @param w W_ID
     * @param d D_ID
     * @param cW C_W_ID: W_ID for 85%, another warehouse for 15% (when there is one)
     * @param cD C_D_ID
     * @param customer the customer, 60% by last name
     * @param amount H_AMOUNT in cents, 1.00..=5,000.00
     */
    public record PaymentIn(int w, int d, int cW, int cD, Customer customer, long amount) {
        /**
         * @param env the environment
         * @param r the generator
         * @return the input
         */
        public static PaymentIn draw(Env env, SplittableRandom r) {
            int w = env.warehouse(r);
            int d = Gen.uniform(r, 1, 10);
            int cW = w;
            int cD = d;
            if (env.warehouses() > 1 && Gen.uniform(r, 1, 100) > 85) {
                cW = env.otherWarehouse(r, w);
                cD = Gen.uniform(r, 1, 10);
            }
            return new PaymentIn(w, d, cW, cD, env.customer(r), Gen.uniform(r, 100, 500_000));
        }
    }

    /**
     * Order-Status's input (clause 2.6.1).
     *
     * @param w W_ID
     * @param d D_ID
     * @param customer the customer, 60% by last name
     */
    public record OrderStatusIn(int w, int d, Customer customer) {
        /**
         * @param env the environment
         * @param r the generator
         * @return the input
         */
        public static OrderStatusIn draw(Env env, SplittableRandom r) {
            int w = env.warehouse(r);
            int d = Gen.uniform(r, 1, 10);
            return new OrderStatusIn(w, d, env.customer(r));
        }
    }

    /**
     * Delivery's input (clause 2.7.1).
     *
     * @param w W_ID
     * @param carrier O_CARRIER_ID, 1..=10
     */
    public record DeliveryIn(int w, int carrier) {
        /**
         * @param env the environment
         * @param r the generator
         * @return the input
         */
        public static DeliveryIn draw(Env env, SplittableRandom r) {
            int w = env.warehouse(r);
            return new DeliveryIn(w, Gen.uniform(r, 1, 10));
        }
    }

    /**
     * Stock-Level's input (clause 2.8.1).
     *
     * @param w W_ID
     * @param d D_ID
     * @param threshold 10..=20
     */
    public record StockLevelIn(int w, int d, int threshold) {
        /**
         * @param env the environment
         * @param r the generator
         * @return the input
         */
        public static StockLevelIn draw(Env env, SplittableRandom r) {
            int w = env.warehouse(r);
            int d = Gen.uniform(r, 1, 10);
            return new StockLevelIn(w, d, Gen.uniform(r, 10, 20));
        }
    }

    /**
     * C_DATA after a Payment by a bad-credit customer (clause 2.5.2.2): the payment's ids and
     * amount in front of the old value, cut to 500 characters.
     *
     * @param c C_ID
     * @param in the payment
     * @param old the old C_DATA
     * @return the new C_DATA
     */
    static String bcData(int c, PaymentIn in, String old) {
        String s = String.format("%d %d %d %d %d %d.%02d ", c, in.cD(), in.cW(), in.d(), in.w(),
                in.amount() / 100, in.amount() % 100) + old;
        return s.length() > 500 ? s.substring(0, 500) : s;
    }
}

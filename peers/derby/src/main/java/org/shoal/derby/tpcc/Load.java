package org.shoal.derby.tpcc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.List;
import java.util.SplittableRandom;
import org.shoal.derby.Progress;
import org.shoal.derby.tpcc.Schema.T;

/**
 * The initial population of clause 4.3.3.1, ported from the Rust workload's {@code load.rs}
 * (same rows, same order, same derivations; the random streams are Java's
 * {@link SplittableRandom} seeded with the run's seed).
 *
 * <p>Per warehouse: STOCK (one row per item), 10 DISTRICTs, CUSTOMERs (the first 1,000 of a
 * district named by the syllables of {@code c_id - 1}, the rest by NURand), one HISTORY row
 * per customer, ORDERs (customers in a random permutation), 5..=15 ORDER-LINEs per order, and
 * NEW-ORDER rows for the last {@code newOrders} orders. ITEM once. At a smaller scale the
 * year-to-date totals shrink with the number of customers ({@code d_ytd} = 10.00 per
 * customer, {@code w_ytd} = the districts' sum) so conditions 1, 8 and 9 hold.
 * Rows go in JDBC batches, one transaction per {@link #LOAD_TXN_ROWS} rows.
 */
final class Load {
    /** Rows per load transaction. */
    static final int LOAD_TXN_ROWS = 5_000;
    /** Initial H_AMOUNT and C_YTD_PAYMENT (10.00) in cents. */
    static final long INITIAL_PAYMENT = 1_000;

    private Load() {}

    /**
     * @param s the scale
     * @param warehouses warehouses
     * @return rows the population has in all (for progress)
     */
    static long totalRows(TpccScale s, int warehouses) {
        long perDistrict = 2L * s.customers() + 11L * s.orders() + s.newOrders();
        return s.items() + (long) warehouses * (1 + s.items() + 10 * (1 + perDistrict));
    }

    /** Batches rows per table and commits every {@link #LOAD_TXN_ROWS} rows. */
    private static final class Sink {
        private final Connection c;
        private final Progress progress;
        private final PreparedStatement[] ins = new PreparedStatement[T.values().length];
        private final int[] batched = new int[T.values().length];
        private int pending;

        Sink(Connection c, Progress progress) throws SQLException {
            this.c = c;
            this.progress = progress;
            for (T t : T.values()) {
                ins[t.ordinal()] = c.prepareStatement(t.insertSql());
            }
        }

        void row(T t, Object... values) throws SQLException {
            PreparedStatement ps = ins[t.ordinal()];
            List<Schema.Col> cols = t.columns();
            for (int i = 0; i < values.length; i++) {
                Object v = values[i];
                if (v == null) {
                    ps.setNull(i + 1, cols.get(i).jdbcType());
                } else if (v instanceof Integer x) {
                    ps.setInt(i + 1, x);
                } else if (v instanceof Long x) {
                    ps.setLong(i + 1, x);
                } else if (v instanceof String x) {
                    ps.setString(i + 1, x);
                } else if (v instanceof Timestamp x) {
                    ps.setTimestamp(i + 1, x);
                } else {
                    throw new IllegalArgumentException("no JDBC type for " + v.getClass());
                }
            }
            ps.addBatch();
            batched[t.ordinal()]++;
            if (++pending == LOAD_TXN_ROWS) {
                commit();
            }
        }

        void commit() throws SQLException {
            for (int i = 0; i < ins.length; i++) {
                if (batched[i] > 0) {
                    ins[i].executeBatch();
                    batched[i] = 0;
                }
            }
            c.commit();
            progress.inc(pending);
            pending = 0;
        }

        void close() throws SQLException {
            for (PreparedStatement ps : ins) {
                ps.close();
            }
        }
    }

    private static Object[] address(SplittableRandom r) {
        return new Object[] {Gen.aString(r, 10, 20), Gen.aString(r, 10, 20),
            Gen.aString(r, 10, 20), Gen.aString(r, 2, 2), Gen.zip(r)};
    }

    private static Object[] concat(Object[]... parts) {
        int n = 0;
        for (Object[] p : parts) {
            n += p.length;
        }
        Object[] out = new Object[n];
        int at = 0;
        for (Object[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /**
     * Writes the whole population.
     *
     * @param c the connection (autocommit off)
     * @param scale the sizes
     * @param warehouses warehouses
     * @param k NURand's constants (the load uses {@code cLastLoad})
     * @param seed the run's seed
     * @param progress counts rows written
     * @throws SQLException on an engine error
     */
    static void load(Connection c, TpccScale scale, int warehouses, Gen.NuRand k, long seed,
            Progress progress) throws SQLException {
        SplittableRandom r = new SplittableRandom(seed);
        Timestamp now = new Timestamp(System.currentTimeMillis());
        Sink sink = new Sink(c, progress);
        for (int i = 1; i <= scale.items(); i++) {
            sink.row(T.ITEM, i, Gen.uniform(r, 1, 10_000), Gen.aString(r, 14, 24),
                    (long) Gen.uniform(r, 100, 10_000), Gen.dataField(r));
        }
        long hId = 0;
        for (int w = 1; w <= warehouses; w++) {
            sink.row(T.WAREHOUSE, concat(new Object[] {w, Gen.aString(r, 6, 10)}, address(r),
                    new Object[] {Gen.uniform(r, 0, 2_000),
                        10L * scale.customers() * INITIAL_PAYMENT}));
            for (int i = 1; i <= scale.items(); i++) {
                Object[] row = new Object[17];
                row[0] = w;
                row[1] = i;
                row[2] = Gen.uniform(r, 10, 100);
                for (int x = 0; x < 10; x++) {
                    row[3 + x] = Gen.aString(r, 24, 24);
                }
                row[13] = 0L;
                row[14] = 0;
                row[15] = 0;
                row[16] = Gen.dataField(r);
                sink.row(T.STOCK, row);
            }
            for (int d = 1; d <= 10; d++) {
                sink.row(T.DISTRICT, concat(new Object[] {w, d, Gen.aString(r, 6, 10)},
                        address(r), new Object[] {Gen.uniform(r, 0, 2_000),
                            scale.customers() * INITIAL_PAYMENT, scale.orders() + 1}));
                for (int cu = 1; cu <= scale.customers(); cu++) {
                    String credit = r.nextInt(10) == 0 ? "BC" : "GC";
                    Object[] head = {w, d, cu, Gen.aString(r, 8, 16), "OE",
                        Gen.loadLastName(r, k, cu)};
                    Object[] addr = address(r);
                    Object[] tail = {Gen.nString(r, 16, 16), now, credit, 5_000_000L,
                        Gen.uniform(r, 0, 5_000), -INITIAL_PAYMENT, INITIAL_PAYMENT, 1, 0,
                        Gen.aString(r, 300, 500)};
                    sink.row(T.CUSTOMER, concat(head, addr, tail));
                    hId++;
                    sink.row(T.HISTORY, hId, cu, d, w, d, w, now, INITIAL_PAYMENT,
                            Gen.aString(r, 12, 24));
                }
                int[] perm = new int[scale.customers()];
                for (int i = 0; i < perm.length; i++) {
                    perm[i] = i + 1;
                }
                for (int i = perm.length - 1; i > 0; i--) {
                    int j = r.nextInt(i + 1);
                    int t = perm[i];
                    perm[i] = perm[j];
                    perm[j] = t;
                }
                int delivered = scale.deliveredAtLoad();
                for (int o = 1; o <= scale.orders(); o++) {
                    int olCnt = Gen.uniform(r, 5, 15);
                    boolean old = o <= delivered;
                    sink.row(T.ORDERS, w, d, o, perm[(o - 1) % perm.length], now,
                            old ? (Object) Gen.uniform(r, 1, 10) : null, olCnt, 1);
                    for (int n = 1; n <= olCnt; n++) {
                        sink.row(T.ORDER_LINE, w, d, o, n, Gen.uniform(r, 1, scale.items()), w,
                                old ? now : null, 5,
                                old ? 0L : (long) Gen.uniform(r, 1, 999_999),
                                Gen.aString(r, 24, 24));
                    }
                    if (!old) {
                        sink.row(T.NEW_ORDER, w, d, o);
                    }
                }
            }
        }
        sink.commit();
        sink.close();
    }
}

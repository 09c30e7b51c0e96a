package org.shoal.derby.tpcc;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.shoal.derby.Progress;
import org.shoal.derby.Sql;
import org.shoal.derby.Worker;
import org.shoal.derby.Workload;
import org.shoal.derby.tpcc.Input.Kind;

/**
 * {@code tpcc}: TPC-C (revision 5.11) on Derby, ported from the Rust workload
 * ({@code crates/shoal-bench/src/workload/tpcc/}): the nine tables of {@link Schema}, the
 * population of {@link Load}, the inputs and mixes of {@link Input}, the transactions of
 * {@link Txns} and the consistency conditions of {@link Check}.
 *
 * <p>Variants: {@code standard} (45% New-Order, 43% Payment, 4% each of the others, drawn
 * per transaction), {@code payment} and {@code new-order}. As in the Rust workload: a
 * closed loop without terminals or think time, home warehouse and district drawn per
 * transaction, Delivery run in the worker; 1% of New-Orders end with an unused item and roll
 * back, counted as done (and in {@code engine_stats} as {@code tpcc.new_order_rollbacks}); the
 * shares of the kinds done are the {@code mix_<kind>} fields.
 */
public final class Tpcc implements Workload {
    private final Input.Mix mix;
    private final int warehouses;
    private final TpccScale scale;
    private final long seed;
    private final Input.Env env;

    /**
     * @param variant standard, payment or new-order
     * @param warehouses warehouses
     * @param scale the population's sizes
     * @param seed the run's seed (NURand constants and the load)
     */
    public Tpcc(String variant, int warehouses, TpccScale scale, long seed) {
        this.mix = Input.Mix.of(variant);
        this.warehouses = warehouses;
        this.scale = scale;
        this.seed = seed;
        this.env = new Input.Env(warehouses, scale,
                Gen.NuRand.random(new SplittableRandom(seed)));
    }

    @Override
    public String name() {
        return "tpcc";
    }

    @Override
    public List<String> kinds() {
        List<String> k = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            k.add(kind.label());
        }
        return k;
    }

    @Override
    public long rowsToLoad() {
        return Load.totalRows(scale, warehouses);
    }

    @Override
    public void setup(Connection c, int workers, Progress progress) throws SQLException {
        Schema.createTables(c);
        Load.load(c, scale, warehouses, env.k(), seed, progress);
        Schema.addKeys(c);
    }

    @Override
    public Worker worker(Connection c, int index) throws SQLException {
        Txns t = new Txns(c);
        return new Worker() {
            /** Next HISTORY key of this worker (load keys are below 2^40). */
            private long seq;
            private long rollbacks;

            @Override
            public int run(SplittableRandom rng) throws SQLException {
                Kind kind = mix.draw(rng);
                Timestamp now = new Timestamp(System.currentTimeMillis());
                switch (kind) {
                    case NEW_ORDER -> {
                        if (!t.newOrder(Input.NewOrderIn.draw(env, rng), now)) {
                            rollbacks++;
                        }
                    }
                    case PAYMENT -> {
                        Input.PaymentIn in = Input.PaymentIn.draw(env, rng);
                        long hId = ((index + 1L) << 40) | seq++;
                        t.payment(in, hId, now);
                    }
                    case ORDER_STATUS -> t.orderStatus(Input.OrderStatusIn.draw(env, rng));
                    case DELIVERY -> t.delivery(Input.DeliveryIn.draw(env, rng), now);
                    case STOCK_LEVEL -> t.stockLevel(Input.StockLevelIn.draw(env, rng));
                    default -> throw new IllegalStateException("no kind " + kind);
                }
                return kind.ordinal();
            }

            @Override
            public void rollbackQuietly() {
                Sql.rollbackQuietly(c);
            }

            @Override
            public Map<String, Long> counters() {
                return Map.of("tpcc.new_order_rollbacks", rollbacks);
            }
        };
    }

    @Override
    public List<String> check(Connection c) throws SQLException {
        return Check.check(Check.read(c), scale.deliveredAtLoad());
    }

    @Override
    public void config(ObjectNode config) {
        config.put("warehouses", warehouses);
        config.put("tpcc_scale", scale.name());
        config.put("items", scale.items());
        config.put("customers_per_district", scale.customers());
        config.put("orders_per_district", scale.orders());
        config.put("new_orders_per_district", scale.newOrders());
    }

    @Override
    public void pointFields(ObjectNode line, long ops, double durationS, long[] kindCounts) {
        ObjectNode stats = (ObjectNode) line.get("engine_stats");
        Kind[] kinds = Kind.values();
        for (int i = 0; i < kinds.length; i++) {
            stats.put("tpcc." + kinds[i].label(), kindCounts[i]);
            if (ops == 0) {
                line.putNull("mix_" + kinds[i].label());
            } else {
                line.put("mix_" + kinds[i].label(), (double) kindCounts[i] / ops);
            }
        }
    }
}

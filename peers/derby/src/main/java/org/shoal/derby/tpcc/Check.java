package org.shoal.derby.tpcc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The consistency conditions 1–12 of clause 3.3.2, ported from the Rust workload's
 * {@code check.rs}: a {@link Snapshot} of the fields they read is taken with SQL ({@code GROUP
 * BY} queries on a quiet database), then each condition is checked with the Rust logic and
 * wording.
 *
 * <pre>
 *  1  W_YTD = sum(D_YTD)                  7  OL_DELIVERY_D NULL iff O_CARRIER_ID NULL
 *  2  D_NEXT_O_ID - 1 = max(O_ID)         8  W_YTD = sum(H_AMOUNT) of the warehouse
 *     = max(NO_O_ID)                      9  D_YTD = sum(H_AMOUNT) of the district
 *  3  max - min + 1 = count(NEW-ORDER)   10  C_BALANCE = delivered OL_AMOUNT - H_AMOUNT
 *  4  sum(O_OL_CNT) = count(ORDER-LINE)  11  count(ORDER) - count(NEW-ORDER)
 *  5  O_CARRIER_ID NULL iff NEW-ORDER row     = delivered at load + sum(C_DELIVERY_CNT)
 *  6  O_OL_CNT = the order's lines       12  C_BALANCE + C_YTD_PAYMENT = delivered OL_AMOUNT
 * </pre>
 */
public final class Check {
    /** Failures listed per condition before the rest are only counted. */
    private static final int MAX_LISTED = 3;

    private Check() {}

    /** District key. */
    record Wd(int w, int d) implements Comparable<Wd> {
        @Override
        public int compareTo(Wd o) {
            return w != o.w ? Integer.compare(w, o.w) : Integer.compare(d, o.d);
        }
    }

    /** Order or customer key within a district. */
    record Wdx(int w, int d, int x) {}

    /** An order's fields. */
    record OrderSnap(int cId, boolean carrierNull, int olCnt) {}

    /** An order's lines, summed. */
    record LinesSnap(long count, long undelivered, long deliveredAmount) {}

    /** A customer's fields. */
    record CustomerSnap(long balance, long ytdPayment, long deliveryCnt) {}

    /** A district's fields. */
    record DistrictSnap(long ytd, int nextOId) {}

    /** What the conditions read. */
    static final class Snapshot {
        /** W_YTD by warehouse. */
        final Map<Integer, Long> wYtd = new TreeMap<>();
        /** Districts. */
        final Map<Wd, DistrictSnap> districts = new TreeMap<>();
        /** NO_O_IDs of each district, ascending. */
        final Map<Wd, List<Integer>> newOrders = new HashMap<>();
        /** Orders. */
        final Map<Wdx, OrderSnap> orders = new HashMap<>();
        /** Each order's lines, summed. */
        final Map<Wdx, LinesSnap> lines = new HashMap<>();
        /** sum(H_AMOUNT) by the district paid at. */
        final Map<Wd, Long> histDistrict = new HashMap<>();
        /** sum(H_AMOUNT) by the customer who paid. */
        final Map<Wdx, Long> histCustomer = new HashMap<>();
        /** Customers. */
        final Map<Wdx, CustomerSnap> customers = new HashMap<>();
    }

    private interface RowFn {
        void row(ResultSet r) throws SQLException;
    }

    private static void each(Connection c, String sql, RowFn f) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            while (r.next()) {
                f.row(r);
            }
        }
    }

    /**
     * Reads the snapshot.
     *
     * @param c a connection on a quiet database
     * @return the snapshot
     * @throws SQLException on an engine error
     */
    static Snapshot read(Connection c) throws SQLException {
        Snapshot s = new Snapshot();
        each(c, "SELECT w_id, w_ytd FROM warehouse", r -> s.wYtd.put(r.getInt(1), r.getLong(2)));
        each(c, "SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM district", r -> s.districts.put(
                new Wd(r.getInt(1), r.getInt(2)), new DistrictSnap(r.getLong(3), r.getInt(4))));
        each(c, "SELECT h_w_id, h_d_id, SUM(h_amount) FROM history GROUP BY h_w_id, h_d_id",
                r -> s.histDistrict.put(new Wd(r.getInt(1), r.getInt(2)), r.getLong(3)));
        each(c, "SELECT h_c_w_id, h_c_d_id, h_c_id, SUM(h_amount) FROM history"
                + " GROUP BY h_c_w_id, h_c_d_id, h_c_id",
                r -> s.histCustomer.put(new Wdx(r.getInt(1), r.getInt(2), r.getInt(3)),
                        r.getLong(4)));
        each(c, "SELECT c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, c_delivery_cnt"
                + " FROM customer", r -> s.customers.put(
                        new Wdx(r.getInt(1), r.getInt(2), r.getInt(3)),
                        new CustomerSnap(r.getLong(4), r.getLong(5), r.getLong(6))));
        each(c, "SELECT no_w_id, no_d_id, no_o_id FROM new_order"
                + " ORDER BY no_w_id, no_d_id, no_o_id",
                r -> s.newOrders.computeIfAbsent(new Wd(r.getInt(1), r.getInt(2)),
                        k -> new ArrayList<>()).add(r.getInt(3)));
        each(c, "SELECT o_w_id, o_d_id, o_id, o_c_id,"
                + " CASE WHEN o_carrier_id IS NULL THEN 1 ELSE 0 END, o_ol_cnt FROM orders",
                r -> s.orders.put(new Wdx(r.getInt(1), r.getInt(2), r.getInt(3)),
                        new OrderSnap(r.getInt(4), r.getInt(5) == 1, r.getInt(6))));
        each(c, "SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*),"
                + " SUM(CASE WHEN ol_delivery_d IS NULL THEN 1 ELSE 0 END),"
                + " SUM(CASE WHEN ol_delivery_d IS NULL THEN 0 ELSE ol_amount END)"
                + " FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id",
                r -> s.lines.put(new Wdx(r.getInt(1), r.getInt(2), r.getInt(3)),
                        new LinesSnap(r.getLong(4), r.getLong(5), r.getLong(6))));
        return s;
    }

    /** Collects failures per condition. */
    private static final class Failures {
        final List<String> out = new ArrayList<>();
        final Map<Integer, Integer> per = new TreeMap<>();

        void add(int cond, java.util.function.Supplier<String> msg) {
            int n = per.merge(cond, 1, Integer::sum);
            if (n <= MAX_LISTED) {
                out.add("condition " + cond + ": " + msg.get());
            }
        }

        List<String> finish() {
            per.forEach((cond, n) -> {
                if (n > MAX_LISTED) {
                    out.add("condition " + cond + ": " + (n - MAX_LISTED) + " more failures");
                }
            });
            return out;
        }
    }

    /**
     * Checks conditions 1 to 12.
     *
     * @param s the snapshot
     * @param deliveredAtLoad orders per district the load delivered (condition 11)
     * @return the failures; empty if all hold
     */
    static List<String> check(Snapshot s, long deliveredAtLoad) {
        Failures f = new Failures();
        Map<Wd, Integer> oMax = new HashMap<>();
        Map<Wd, Long> oCount = new HashMap<>();
        Map<Wd, Long> olCntSum = new HashMap<>();
        Map<Wd, Long> olCount = new HashMap<>();
        Map<Wdx, Long> deliveredByCustomer = new HashMap<>();
        Map<Wd, Long> deliveryCnt = new HashMap<>();
        s.customers.forEach((k, cs) ->
                deliveryCnt.merge(new Wd(k.w(), k.d()), cs.deliveryCnt(), Long::sum));
        s.lines.forEach((k, l) -> {
            olCount.merge(new Wd(k.w(), k.d()), l.count(), Long::sum);
            if (!s.orders.containsKey(k)) {
                f.add(6, () -> "order lines of missing order (" + k.w() + "," + k.d() + ","
                        + k.x() + ")");
            }
        });
        s.orders.forEach((k, os) -> {
            Wd wd = new Wd(k.w(), k.d());
            int o = k.x();
            oMax.merge(wd, o, Math::max);
            oCount.merge(wd, 1L, Long::sum);
            olCntSum.merge(wd, (long) os.olCnt(), Long::sum);
            List<Integer> no = s.newOrders.getOrDefault(wd, List.of());
            boolean isNew = Collections.binarySearch(no, o) >= 0;
            String at = "order (" + k.w() + "," + k.d() + "," + o + ")";
            if (os.carrierNull() != isNew) {
                f.add(5, () -> at + ": carrier null " + os.carrierNull() + " but NEW-ORDER row "
                        + isNew);
            }
            LinesSnap l = s.lines.getOrDefault(k, new LinesSnap(0, 0, 0));
            if (l.count() != os.olCnt()) {
                f.add(6, () -> at + ": O_OL_CNT " + os.olCnt() + " but " + l.count() + " lines");
            }
            boolean allUndelivered = l.undelivered() == l.count();
            boolean noneUndelivered = l.undelivered() == 0;
            if ((os.carrierNull() && !allUndelivered) || (!os.carrierNull() && !noneUndelivered)) {
                f.add(7, () -> at + ": carrier null " + os.carrierNull() + " but "
                        + l.undelivered() + " of " + l.count() + " lines undelivered");
            }
            deliveredByCustomer.merge(new Wdx(k.w(), k.d(), os.cId()), l.deliveredAmount(),
                    Long::sum);
        });
        s.wYtd.forEach((w, wYtd) -> {
            long dSum = 0;
            for (Map.Entry<Wd, DistrictSnap> e : s.districts.entrySet()) {
                if (e.getKey().w() == w) {
                    dSum += e.getValue().ytd();
                }
            }
            long d = dSum;
            if (wYtd != dSum) {
                f.add(1, () -> "warehouse " + w + ": W_YTD " + wYtd + " != sum(D_YTD) " + d);
            }
            long hSum = 0;
            for (Map.Entry<Wd, Long> e : s.histDistrict.entrySet()) {
                if (e.getKey().w() == w) {
                    hSum += e.getValue();
                }
            }
            long h = hSum;
            if (wYtd != hSum) {
                f.add(8, () -> "warehouse " + w + ": W_YTD " + wYtd + " != sum(H_AMOUNT) " + h);
            }
        });
        s.districts.forEach((wd, ds) -> {
            String at = "district (" + wd.w() + "," + wd.d() + ")";
            List<Integer> no = s.newOrders.getOrDefault(wd, List.of());
            int om = oMax.getOrDefault(wd, 0);
            if (ds.nextOId() - 1 != om) {
                f.add(2, () -> at + ": D_NEXT_O_ID - 1 = " + (ds.nextOId() - 1)
                        + " != max(O_ID) " + om);
            }
            if (!no.isEmpty()) {
                int lo = no.get(0);
                int hi = no.get(no.size() - 1);
                if (hi != ds.nextOId() - 1) {
                    f.add(2, () -> at + ": D_NEXT_O_ID - 1 = " + (ds.nextOId() - 1)
                            + " != max(NO_O_ID) " + hi);
                }
                if ((long) hi - lo + 1 != no.size()) {
                    f.add(3, () -> at + ": NEW-ORDER " + lo + "..=" + hi + " holds " + no.size()
                            + " rows");
                }
            }
            long ocs = olCntSum.getOrDefault(wd, 0L);
            long olc = olCount.getOrDefault(wd, 0L);
            if (ocs != olc) {
                f.add(4, () -> at + ": sum(O_OL_CNT) " + ocs + " != " + olc + " lines");
            }
            long h = s.histDistrict.getOrDefault(wd, 0L);
            if (ds.ytd() != h) {
                f.add(9, () -> at + ": D_YTD " + ds.ytd() + " != sum(H_AMOUNT) " + h);
            }
            long oc = oCount.getOrDefault(wd, 0L);
            long dc = deliveryCnt.getOrDefault(wd, 0L);
            if (oc - no.size() != deliveredAtLoad + dc) {
                f.add(11, () -> at + ": " + oc + " orders - " + no.size() + " new orders != "
                        + deliveredAtLoad + " + sum(C_DELIVERY_CNT) " + dc);
            }
        });
        s.customers.forEach((k, cs) -> {
            long delivered = deliveredByCustomer.getOrDefault(k, 0L);
            long paid = s.histCustomer.getOrDefault(k, 0L);
            String at = "customer (" + k.w() + "," + k.d() + "," + k.x() + ")";
            if (cs.balance() != delivered - paid) {
                f.add(10, () -> at + ": C_BALANCE " + cs.balance() + " != " + delivered
                        + " delivered - " + paid + " paid");
            }
            if (cs.balance() + cs.ytdPayment() != delivered) {
                f.add(12, () -> at + ": C_BALANCE " + cs.balance() + " + C_YTD_PAYMENT "
                        + cs.ytdPayment() + " != " + delivered + " delivered");
            }
        });
        return f.finish();
    }
}

package org.shoal.derby.tpcc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import org.shoal.derby.Sql;
import org.shoal.derby.tpcc.Input.Customer;
import org.shoal.derby.tpcc.Input.DeliveryIn;
import org.shoal.derby.tpcc.Input.Line;
import org.shoal.derby.tpcc.Input.NewOrderIn;
import org.shoal.derby.tpcc.Input.OrderStatusIn;
import org.shoal.derby.tpcc.Input.PaymentIn;
import org.shoal.derby.tpcc.Input.StockLevelIn;

/**
 * The five TPC-C transactions on one worker's connection, with the same reads and writes as
 * the Rust drivers ({@code sqlite_txns.rs}, {@code shoal_txns.rs}) and every statement
 * prepared once. They run at READ COMMITTED; a row that is read and then written is written
 * first ({@code UPDATE ... SET x = x + ?}, which takes its X lock) and read back under that
 * lock, so no update is lost. Each method ends the transaction (commit, or New-Order's
 * rollback for an unused item).
 */
final class Txns {
    private final Connection c;
    // New-Order.
    private final PreparedStatement selWTax;
    private final PreparedStatement updDNext;
    private final PreparedStatement selDNext;
    private final PreparedStatement selCDiscount;
    private final PreparedStatement insOrder;
    private final PreparedStatement insNewOrder;
    private final PreparedStatement selItem;
    private final PreparedStatement updStock;
    private final PreparedStatement[] selStockDist = new PreparedStatement[10];
    private final PreparedStatement insOrderLine;
    // Payment.
    private final PreparedStatement updDYtd;
    private final PreparedStatement selD;
    private final PreparedStatement selCByName;
    private final PreparedStatement updCPay;
    private final PreparedStatement selCPay;
    private final PreparedStatement updCData;
    private final PreparedStatement updWYtd;
    private final PreparedStatement selW;
    private final PreparedStatement insHistory;
    // Order-Status.
    private final PreparedStatement selCStatus;
    private final PreparedStatement selLastOrder;
    private final PreparedStatement selLines;
    // Delivery.
    private final PreparedStatement selOldestNewOrder;
    private final PreparedStatement delNewOrder;
    private final PreparedStatement updCarrier;
    private final PreparedStatement selOrderCustomer;
    private final PreparedStatement updDeliveryDate;
    private final PreparedStatement selLinesSum;
    private final PreparedStatement updCDelivery;
    // Stock-Level.
    private final PreparedStatement selNextOId;
    private final PreparedStatement selLowStock;

    /**
     * Prepares every statement on {@code c}.
     *
     * @param c the worker's connection
     * @throws SQLException on an engine error
     */
    Txns(Connection c) throws SQLException {
        this.c = c;
        selWTax = c.prepareStatement("SELECT w_tax FROM warehouse WHERE w_id = ?");
        updDNext = c.prepareStatement("UPDATE district SET d_next_o_id = d_next_o_id + 1"
                + " WHERE d_w_id = ? AND d_id = ?");
        selDNext = c.prepareStatement(
                "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?");
        selCDiscount = c.prepareStatement("SELECT c_discount, c_last, c_credit FROM customer"
                + " WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        insOrder = c.prepareStatement("INSERT INTO orders VALUES (?, ?, ?, ?, ?, NULL, ?, ?)");
        insNewOrder = c.prepareStatement("INSERT INTO new_order VALUES (?, ?, ?)");
        selItem = c.prepareStatement("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?");
        updStock = c.prepareStatement("UPDATE stock SET s_quantity = CASE WHEN s_quantity >= ?"
                + " THEN s_quantity - ? ELSE s_quantity - ? + 91 END, s_ytd = s_ytd + ?,"
                + " s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ?"
                + " WHERE s_w_id = ? AND s_i_id = ?");
        for (int d = 1; d <= 10; d++) {
            selStockDist[d - 1] = c.prepareStatement(String.format(
                    "SELECT s_dist_%02d, s_data FROM stock WHERE s_w_id = ? AND s_i_id = ?", d));
        }
        insOrderLine = c.prepareStatement(
                "INSERT INTO order_line VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)");
        updDYtd = c.prepareStatement(
                "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?");
        selD = c.prepareStatement("SELECT d_name, d_street_1, d_street_2, d_city, d_state,"
                + " d_zip FROM district WHERE d_w_id = ? AND d_id = ?");
        selCByName = c.prepareStatement("SELECT c_id FROM customer"
                + " WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first");
        updCPay = c.prepareStatement("UPDATE customer SET c_balance = c_balance - ?,"
                + " c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1"
                + " WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        selCPay = c.prepareStatement("SELECT c_credit, c_data, c_first, c_middle, c_last,"
                + " c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since,"
                + " c_credit_lim, c_discount, c_balance FROM customer"
                + " WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        updCData = c.prepareStatement(
                "UPDATE customer SET c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        updWYtd = c.prepareStatement("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?");
        selW = c.prepareStatement("SELECT w_name, w_street_1, w_street_2, w_city, w_state,"
                + " w_zip FROM warehouse WHERE w_id = ?");
        insHistory = c.prepareStatement("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        selCStatus = c.prepareStatement("SELECT c_balance, c_first, c_middle, c_last"
                + " FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        selLastOrder = c.prepareStatement("SELECT o_id, o_entry_d, o_carrier_id FROM orders"
                + " WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?"
                + " ORDER BY o_id DESC FETCH FIRST 1 ROWS ONLY");
        selLines = c.prepareStatement("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount,"
                + " ol_delivery_d FROM order_line"
                + " WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?");
        selOldestNewOrder = c.prepareStatement("SELECT no_o_id FROM new_order"
                + " WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id FETCH FIRST 1 ROWS ONLY");
        delNewOrder = c.prepareStatement("DELETE FROM new_order"
                + " WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?");
        updCarrier = c.prepareStatement("UPDATE orders SET o_carrier_id = ?"
                + " WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?");
        selOrderCustomer = c.prepareStatement(
                "SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?");
        updDeliveryDate = c.prepareStatement("UPDATE order_line SET ol_delivery_d = ?"
                + " WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?");
        selLinesSum = c.prepareStatement("SELECT SUM(ol_amount) FROM order_line"
                + " WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?");
        updCDelivery = c.prepareStatement("UPDATE customer SET c_balance = c_balance + ?,"
                + " c_delivery_cnt = c_delivery_cnt + 1"
                + " WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?");
        selNextOId = c.prepareStatement(
                "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?");
        selLowStock = c.prepareStatement("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock"
                + " WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ?"
                + " AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?");
    }

    private static void set(PreparedStatement ps, Object... v) throws SQLException {
        for (int i = 0; i < v.length; i++) {
            ps.setObject(i + 1, v[i]);
        }
    }

    private static void updateOne(PreparedStatement ps, String what, Object... v)
            throws SQLException {
        set(ps, v);
        if (ps.executeUpdate() != 1) {
            throw new SQLException("tpcc: " + what + " does not exist");
        }
    }

    /**
     * New-Order (clause 2.4.2).
     *
     * @param in the input
     * @param now the entry date
     * @return true if it committed, false if it rolled back for its unused item
     * @throws SQLException on an engine error
     */
    boolean newOrder(NewOrderIn in, Timestamp now) throws SQLException {
        int w = in.w();
        int d = in.d();
        long wTax;
        set(selWTax, w);
        try (ResultSet r = Sql.one(selWTax, "warehouse " + w)) {
            wTax = r.getLong(1);
        }
        updateOne(updDNext, "district", w, d);
        long dTax;
        int oId;
        set(selDNext, w, d);
        try (ResultSet r = Sql.one(selDNext, "district")) {
            dTax = r.getLong(1);
            oId = r.getInt(2) - 1;
        }
        long discount;
        set(selCDiscount, w, d, in.c());
        try (ResultSet r = Sql.one(selCDiscount, "customer " + in.c())) {
            discount = r.getLong(1);
            r.getString(2);
            r.getString(3);
        }
        set(insOrder, w, d, oId, in.c(), now, in.lines().size(), in.allLocal() ? 1 : 0);
        insOrder.executeUpdate();
        set(insNewOrder, w, d, oId);
        insNewOrder.executeUpdate();
        long total = 0;
        int n = 0;
        for (Line line : in.lines()) {
            n++;
            long price;
            String iData;
            set(selItem, line.iId());
            try (ResultSet r = selItem.executeQuery()) {
                if (!r.next()) {
                    c.rollback();
                    return false;
                }
                price = r.getLong(1);
                r.getString(2);
                iData = r.getString(3);
            }
            updateOne(updStock, "stock", line.qty() + 10, line.qty(), line.qty(), line.qty(),
                    line.supplyW() != w ? 1 : 0, line.supplyW(), line.iId());
            String distInfo;
            String sData;
            PreparedStatement sel = selStockDist[d - 1];
            set(sel, line.supplyW(), line.iId());
            try (ResultSet r = Sql.one(sel, "stock")) {
                distInfo = r.getString(1);
                sData = r.getString(2);
            }
            // The brand-generic flag (shown to the terminal only).
            boolean brandGeneric = iData.contains("ORIGINAL") && sData.contains("ORIGINAL");
            long amount = price * line.qty();
            total += amount;
            set(insOrderLine, w, d, oId, n, line.iId(), line.supplyW(), line.qty(), amount,
                    distInfo);
            insOrderLine.executeUpdate();
        }
        // The total the terminal would show (clause 2.4.2.2).
        long shown = total * (10_000 - discount) * (10_000 + wTax + dTax) / 100_000_000;
        c.commit();
        return true;
    }

    /**
     * The C_ID of customer {@code sel} of district (w, d): by id, or the one at position
     * ceil(n/2) of those with the last name, sorted by first name.
     */
    private int findCustomer(int w, int d, Customer sel) throws SQLException {
        if (sel.last() == null) {
            return sel.id();
        }
        List<Integer> ids = new ArrayList<>();
        set(selCByName, w, d, sel.last());
        try (ResultSet r = selCByName.executeQuery()) {
            while (r.next()) {
                ids.add(r.getInt(1));
            }
        }
        if (ids.isEmpty()) {
            throw new SQLException("tpcc: no customer named " + sel.last() + " in district ("
                    + w + "," + d + ")");
        }
        return ids.get((ids.size() - 1) / 2);
    }

    /**
     * Payment (clause 2.5.2), in the Rust drivers' order: district, customer, warehouse (the
     * hot row, locked last so its lock is held shortest), history.
     *
     * @param in the input
     * @param hId the HISTORY row's key
     * @param now H_DATE
     * @throws SQLException on an engine error
     */
    void payment(PaymentIn in, long hId, Timestamp now) throws SQLException {
        long amount = in.amount();
        updateOne(updDYtd, "district", amount, in.w(), in.d());
        String dName;
        set(selD, in.w(), in.d());
        try (ResultSet r = Sql.one(selD, "district")) {
            dName = r.getString(1);
        }
        int cid = findCustomer(in.cW(), in.cD(), in.customer());
        updateOne(updCPay, "customer " + cid, amount, amount, in.cW(), in.cD(), cid);
        String credit;
        String data;
        set(selCPay, in.cW(), in.cD(), cid);
        try (ResultSet r = Sql.one(selCPay, "customer " + cid)) {
            credit = r.getString(1);
            data = r.getString(2);
        }
        if (credit.equals("BC")) {
            updateOne(updCData, "customer " + cid, Input.bcData(cid, in, data), in.cW(), in.cD(),
                    cid);
        }
        updateOne(updWYtd, "warehouse", amount, in.w());
        String wName;
        set(selW, in.w());
        try (ResultSet r = Sql.one(selW, "warehouse")) {
            wName = r.getString(1);
        }
        set(insHistory, hId, cid, in.cD(), in.cW(), in.d(), in.w(), now, amount,
                wName + "    " + dName);
        insHistory.executeUpdate();
        c.commit();
    }

    /**
     * Order-Status (clause 2.6.2): the customer, its newest order and that order's lines.
     *
     * @param in the input
     * @return the number of lines read
     * @throws SQLException on an engine error
     */
    int orderStatus(OrderStatusIn in) throws SQLException {
        int cid = findCustomer(in.w(), in.d(), in.customer());
        set(selCStatus, in.w(), in.d(), cid);
        try (ResultSet r = Sql.one(selCStatus, "customer " + cid)) {
            r.getLong(1);
        }
        Integer oId = null;
        set(selLastOrder, in.w(), in.d(), cid);
        try (ResultSet r = selLastOrder.executeQuery()) {
            if (r.next()) {
                oId = r.getInt(1);
            }
        }
        int lines = 0;
        if (oId != null) {
            set(selLines, in.w(), in.d(), oId);
            try (ResultSet r = selLines.executeQuery()) {
                while (r.next()) {
                    r.getTimestamp(5);
                    lines++;
                }
            }
        }
        c.commit();
        return lines;
    }

    /**
     * Delivery (clause 2.7.4) of all ten districts in one transaction: per district the
     * oldest NEW-ORDER row is deleted (retried while a concurrent Delivery takes it first),
     * its order gets the carrier, its lines the delivery date and its customer the amount.
     *
     * @param in the input
     * @param now OL_DELIVERY_D
     * @return the orders delivered
     * @throws SQLException on an engine error
     */
    int delivery(DeliveryIn in, Timestamp now) throws SQLException {
        int w = in.w();
        int delivered = 0;
        for (int d = 1; d <= 10; d++) {
            Integer oId = null;
            for (int attempt = 0; attempt < 16 && oId == null; attempt++) {
                Integer first = null;
                set(selOldestNewOrder, w, d);
                try (ResultSet r = selOldestNewOrder.executeQuery()) {
                    if (r.next()) {
                        first = r.getInt(1);
                    }
                }
                if (first == null) {
                    break;
                }
                set(delNewOrder, w, d, first);
                if (delNewOrder.executeUpdate() == 1) {
                    oId = first;
                }
            }
            if (oId == null) {
                continue;
            }
            updateOne(updCarrier, "order " + oId, in.carrier(), w, d, oId);
            int cid;
            set(selOrderCustomer, w, d, oId);
            try (ResultSet r = Sql.one(selOrderCustomer, "order " + oId)) {
                cid = r.getInt(1);
            }
            set(updDeliveryDate, now, w, d, oId);
            updDeliveryDate.executeUpdate();
            long sum;
            set(selLinesSum, w, d, oId);
            try (ResultSet r = Sql.one(selLinesSum, "lines of order " + oId)) {
                sum = r.getLong(1);
            }
            updateOne(updCDelivery, "customer " + cid, sum, w, d, cid);
            delivered++;
        }
        c.commit();
        return delivered;
    }

    /**
     * Stock-Level (clause 2.8.2): distinct items of the district's last 20 orders whose stock
     * is below the threshold.
     *
     * @param in the input
     * @return the count
     * @throws SQLException on an engine error
     */
    long stockLevel(StockLevelIn in) throws SQLException {
        int next;
        set(selNextOId, in.w(), in.d());
        try (ResultSet r = Sql.one(selNextOId, "district")) {
            next = r.getInt(1);
        }
        long low;
        set(selLowStock, in.w(), in.d(), next, next - Input.STOCK_LEVEL_ORDERS, in.w(),
                in.threshold());
        try (ResultSet r = Sql.one(selLowStock, "stock level")) {
            low = r.getLong(1);
        }
        c.commit();
        return low;
    }
}

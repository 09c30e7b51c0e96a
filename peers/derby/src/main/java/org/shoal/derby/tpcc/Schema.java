package org.shoal.derby.tpcc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.shoal.derby.Sql;

/**
 * The nine TPC-C tables (clause 1.3) as the Rust workload's {@code schema.rs} describes them:
 * the same columns, lengths, primary keys and secondary indexes. Money is BIGINT cents and the
 * rates INT ten-thousandths (exact integers); dates are TIMESTAMP; HISTORY has the surrogate
 * key {@code h_id}. Tables are created bare, loaded, and then get their keys and indexes
 * ({@link #addKeys}), which Derby builds with one sort each.
 */
public final class Schema {
    private Schema() {}

    /**
     * A column.
     *
     * @param name its name
     * @param sqlType its Derby type
     * @param jdbcType its {@link Types} constant (for NULL parameters)
     * @param nullable whether it may be NULL
     */
    record Col(String name, String sqlType, int jdbcType, boolean nullable) {}

    private static Col i4(String n) {
        return new Col(n, "INT", Types.INTEGER, false);
    }

    private static Col i8(String n) {
        return new Col(n, "BIGINT", Types.BIGINT, false);
    }

    private static Col ts(String n) {
        return new Col(n, "TIMESTAMP", Types.TIMESTAMP, false);
    }

    private static Col ch(String n, int len) {
        return new Col(n, "CHAR(" + len + ")", Types.CHAR, false);
    }

    private static Col vc(String n, int len) {
        return new Col(n, "VARCHAR(" + len + ")", Types.VARCHAR, false);
    }

    private static Col nullable(Col c) {
        return new Col(c.name(), c.sqlType(), c.jdbcType(), true);
    }

    private static List<Col> cols(Col... c) {
        return List.of(c);
    }

    private static List<Col> stockCols() {
        List<Col> c = new ArrayList<>(List.of(i4("s_w_id"), i4("s_i_id"), i4("s_quantity")));
        for (int i = 1; i <= 10; i++) {
            c.add(ch(String.format("s_dist_%02d", i), 24));
        }
        c.addAll(List.of(i8("s_ytd"), i4("s_order_cnt"), i4("s_remote_cnt"), vc("s_data", 50)));
        return Collections.unmodifiableList(c);
    }

    /** The nine tables, in the Rust workload's order. */
    public enum T {
        /** WAREHOUSE (one per {@code --warehouses}). */
        WAREHOUSE("warehouse", cols(i4("w_id"), vc("w_name", 10), vc("w_street_1", 20),
                vc("w_street_2", 20), vc("w_city", 20), ch("w_state", 2), ch("w_zip", 9),
                i4("w_tax"), i8("w_ytd")), List.of("w_id"), null, null),
        /** DISTRICT (10 per warehouse). */
        DISTRICT("district", cols(i4("d_w_id"), i4("d_id"), vc("d_name", 10),
                vc("d_street_1", 20), vc("d_street_2", 20), vc("d_city", 20), ch("d_state", 2),
                ch("d_zip", 9), i4("d_tax"), i8("d_ytd"), i4("d_next_o_id")),
                List.of("d_w_id", "d_id"), null, null),
        /** CUSTOMER, with the index Payment and Order-Status find a name with. */
        CUSTOMER("customer", cols(i4("c_w_id"), i4("c_d_id"), i4("c_id"), vc("c_first", 16),
                ch("c_middle", 2), vc("c_last", 16), vc("c_street_1", 20), vc("c_street_2", 20),
                vc("c_city", 20), ch("c_state", 2), ch("c_zip", 9), ch("c_phone", 16),
                ts("c_since"), ch("c_credit", 2), i8("c_credit_lim"), i4("c_discount"),
                i8("c_balance"), i8("c_ytd_payment"), i4("c_payment_cnt"),
                i4("c_delivery_cnt"), vc("c_data", 500)),
                List.of("c_w_id", "c_d_id", "c_id"), "customer_by_name",
                List.of("c_w_id", "c_d_id", "c_last", "c_first")),
        /** HISTORY (grows with Payment; surrogate key). */
        HISTORY("history", cols(i8("h_id"), i4("h_c_id"), i4("h_c_d_id"), i4("h_c_w_id"),
                i4("h_d_id"), i4("h_w_id"), ts("h_date"), i8("h_amount"), vc("h_data", 24)),
                List.of("h_id"), null, null),
        /** NEW-ORDER (orders not yet delivered). */
        NEW_ORDER("new_order", cols(i4("no_w_id"), i4("no_d_id"), i4("no_o_id")),
                List.of("no_w_id", "no_d_id", "no_o_id"), null, null),
        /** ORDER, with the index Order-Status finds a customer's newest order with. */
        ORDERS("orders", cols(i4("o_w_id"), i4("o_d_id"), i4("o_id"), i4("o_c_id"),
                ts("o_entry_d"), nullable(i4("o_carrier_id")), i4("o_ol_cnt"),
                i4("o_all_local")), List.of("o_w_id", "o_d_id", "o_id"), "orders_by_customer",
                List.of("o_w_id", "o_d_id", "o_c_id", "o_id")),
        /** ORDER-LINE. */
        ORDER_LINE("order_line", cols(i4("ol_w_id"), i4("ol_d_id"), i4("ol_o_id"),
                i4("ol_number"), i4("ol_i_id"), i4("ol_supply_w_id"),
                nullable(ts("ol_delivery_d")), i4("ol_quantity"), i8("ol_amount"),
                ch("ol_dist_info", 24)), List.of("ol_w_id", "ol_d_id", "ol_o_id", "ol_number"),
                null, null),
        /** ITEM (100,000 at full scale, shared by every warehouse). */
        ITEM("item", cols(i4("i_id"), i4("i_im_id"), vc("i_name", 24), i8("i_price"),
                vc("i_data", 50)), List.of("i_id"), null, null),
        /** STOCK (one row per item and warehouse). */
        STOCK("stock", stockCols(), List.of("s_w_id", "s_i_id"), null, null);

        private final String table;
        private final List<Col> columns;
        private final List<String> pk;
        private final String indexName;
        private final List<String> indexCols;

        T(String table, List<Col> columns, List<String> pk, String indexName,
                List<String> indexCols) {
            this.table = table;
            this.columns = columns;
            this.pk = pk;
            this.indexName = indexName;
            this.indexCols = indexCols;
        }

        /** @return the table's name */
        public String table() {
            return table;
        }

        /** @return its columns in order */
        List<Col> columns() {
            return columns;
        }

        /** @return {@code CREATE TABLE} without keys */
        String createSql() {
            List<String> defs = new ArrayList<>();
            for (Col c : columns) {
                defs.add(c.name() + " " + c.sqlType() + (c.nullable() ? "" : " NOT NULL"));
            }
            return "CREATE TABLE " + table + " (" + String.join(", ", defs) + ")";
        }

        /** @return {@code INSERT INTO t VALUES (?, ..., ?)} */
        String insertSql() {
            return "INSERT INTO " + table + " VALUES ("
                    + String.join(", ", Collections.nCopies(columns.size(), "?")) + ")";
        }

        /** @return the primary key and the secondary index, if any, as DDL */
        List<String> keySql() {
            List<String> out = new ArrayList<>();
            out.add("ALTER TABLE " + table + " ADD CONSTRAINT " + table + "_pk PRIMARY KEY ("
                    + String.join(", ", pk) + ")");
            if (indexName != null) {
                out.add("CREATE INDEX " + indexName + " ON " + table + " ("
                        + String.join(", ", indexCols) + ")");
            }
            return out;
        }
    }

    /**
     * Creates the nine tables without keys.
     *
     * @param c the connection
     * @throws SQLException on an engine error
     */
    static void createTables(Connection c) throws SQLException {
        for (T t : T.values()) {
            Sql.exec(c, t.createSql());
        }
        c.commit();
    }

    /**
     * Adds the primary keys and secondary indexes (after the load).
     *
     * @param c the connection
     * @throws SQLException on an engine error
     */
    static void addKeys(Connection c) throws SQLException {
        for (T t : T.values()) {
            for (String sql : t.keySql()) {
                Sql.exec(c, sql);
            }
            c.commit();
        }
    }
}

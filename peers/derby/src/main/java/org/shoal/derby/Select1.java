package org.shoal.derby;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@code select1} (seed 000 §4.1; the Rust workload {@code select1.rs}): the table
 * {@code test(a INT PRIMARY KEY, b CHAR(96) FOR BIT DATA)} with {@code rows} rows inserted in
 * key order ({@code b} derived from {@code a}); one transaction is {@code SELECT a FROM test
 * WHERE a = ?} for a uniformly random key, then a commit. Every answer is checked (the row
 * exists and holds its key); after each point the table must still hold every row.
 */
public final class Select1 implements Workload {
    /** Bytes of the {@code b} column. */
    static final int B_BYTES = 96;
    private static final int LOAD_TXN_ROWS = 10_000;

    private final int scale;
    private final long rowsPerScale;
    private final long rows;

    /**
     * @param scale units of {@code rowsPerScale} rows
     * @param rowsPerScale rows per unit (100,000 but in tests)
     */
    public Select1(int scale, long rowsPerScale) {
        this.scale = scale;
        this.rowsPerScale = rowsPerScale;
        this.rows = scale * rowsPerScale;
    }

    /**
     * The value of {@code b} for key {@code a}: twelve little-endian 8-byte words
     * {@code a ^ i} (as the Rust workload's {@code b_value}).
     *
     * @param a the key
     * @return 96 bytes
     */
    static byte[] bValue(long a) {
        byte[] b = new byte[B_BYTES];
        for (int i = 0; i < B_BYTES / 8; i++) {
            long w = a ^ i;
            for (int j = 0; j < 8; j++) {
                b[i * 8 + j] = (byte) (w >>> (8 * j));
            }
        }
        return b;
    }

    @Override
    public String name() {
        return "select1";
    }

    @Override
    public List<String> kinds() {
        return List.of("select1");
    }

    @Override
    public long rowsToLoad() {
        return rows;
    }

    @Override
    public void setup(Connection c, int workers, Progress progress) throws SQLException {
        Sql.exec(c, "CREATE TABLE test (a INT NOT NULL, b CHAR(96) FOR BIT DATA NOT NULL)");
        c.commit();
        try (PreparedStatement ins = c.prepareStatement("INSERT INTO test (a, b) VALUES (?, ?)")) {
            for (long a = 0; a < rows; ) {
                long end = Math.min(rows, a + LOAD_TXN_ROWS);
                for (long k = a; k < end; k++) {
                    ins.setInt(1, (int) k);
                    ins.setBytes(2, bValue(k));
                    ins.addBatch();
                }
                ins.executeBatch();
                c.commit();
                progress.inc(end - a);
                a = end;
            }
        }
        // The index is built after the load (one sort instead of row-by-row inserts).
        Sql.exec(c, "ALTER TABLE test ADD CONSTRAINT test_pk PRIMARY KEY (a)");
        c.commit();
    }

    @Override
    public Worker worker(Connection c, int index) throws SQLException {
        PreparedStatement q = c.prepareStatement("SELECT a FROM test WHERE a = ?");
        return new Worker() {
            @Override
            public int run(SplittableRandom rng) throws SQLException {
                int key = (int) rng.nextLong(rows);
                Integer found = null;
                q.setInt(1, key);
                try (ResultSet r = q.executeQuery()) {
                    if (r.next()) {
                        found = r.getInt(1);
                    }
                }
                c.commit();
                if (found == null || found != key) {
                    throw new IllegalStateException(
                            "select1: key " + key + " read back as " + found);
                }
                return 0;
            }

            @Override
            public void rollbackQuietly() {
                Sql.rollbackQuietly(c);
            }
        };
    }

    @Override
    public List<String> check(Connection c) throws SQLException {
        long n = Sql.queryLong(c, "SELECT COUNT(*) FROM test");
        return n == rows ? List.of() : List.of("test holds " + n + " rows, " + rows
                + " were loaded");
    }

    @Override
    public void config(ObjectNode config) {
        config.put("scale", scale);
        config.put("rows_per_scale", rowsPerScale);
        config.put("rows", rows);
    }

    @Override
    public void pointFields(ObjectNode line, long ops, double durationS, long[] kindCounts) {
        // select1 derives nothing.
    }
}

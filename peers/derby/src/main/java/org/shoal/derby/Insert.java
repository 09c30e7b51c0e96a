package org.shoal.derby;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@code insert} (seed 001 §3.2; the Rust workload {@code insert.rs}): each worker inserts
 * records into its own table {@code insert_<worker>(k BIGINT PRIMARY KEY, v CHAR(100) FOR BIT
 * DATA)}, 1,000 per transaction, keys ascending per worker and continuing across points,
 * values derived from the key. One operation is one transaction of 1,000 single-row
 * {@code INSERT}s (a prepared statement executed 1,000 times, as the Rust drivers do), so
 * {@code ops_per_s} counts transactions and {@code records_per_s} records.
 * Consistency (after every point): each table holds exactly the records its worker committed.
 */
public final class Insert implements Workload {
    /** Records per transaction (seed 001: "Transactions commit every 1000 records"). */
    static final int RECORDS_PER_TXN = 1_000;
    /** Bytes of each record's value. */
    static final int VALUE_BYTES = 100;

    /** Records worker i has committed (its next key); written by worker i only. */
    private long[] committed = new long[0];

    /**
     * The value of key {@code k}: chunk i of 8 bytes is {@code k} rotated left by 7i bits,
     * little-endian, the last chunk cut to 4 bytes (the Rust workload's {@code value_of}).
     *
     * @param k the key
     * @return 100 bytes
     */
    static byte[] valueOf(long k) {
        byte[] v = new byte[VALUE_BYTES];
        for (int i = 0; i * 8 < VALUE_BYTES; i++) {
            long w = Long.rotateLeft(k, i * 7);
            for (int j = 0; j < 8 && i * 8 + j < VALUE_BYTES; j++) {
                v[i * 8 + j] = (byte) (w >>> (8 * j));
            }
        }
        return v;
    }

    @Override
    public String name() {
        return "insert";
    }

    @Override
    public List<String> kinds() {
        return List.of("insert");
    }

    @Override
    public long rowsToLoad() {
        return 0;
    }

    @Override
    public void setup(Connection c, int workers, Progress progress) throws SQLException {
        for (int i = 0; i < workers; i++) {
            Sql.exec(c, "CREATE TABLE insert_" + i
                    + " (k BIGINT NOT NULL PRIMARY KEY, v CHAR(100) FOR BIT DATA NOT NULL)");
        }
        c.commit();
        committed = new long[workers];
    }

    @Override
    public Worker worker(Connection c, int index) throws SQLException {
        PreparedStatement ins = c.prepareStatement(
                "INSERT INTO insert_" + index + " (k, v) VALUES (?, ?)");
        return new Worker() {
            @Override
            public int run(SplittableRandom rng) throws SQLException {
                long first = committed[index];
                for (long k = first; k < first + RECORDS_PER_TXN; k++) {
                    ins.setLong(1, k);
                    ins.setBytes(2, valueOf(k));
                    ins.executeUpdate();
                }
                c.commit();
                committed[index] = first + RECORDS_PER_TXN;
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
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < committed.length; i++) {
            long n = Sql.queryLong(c, "SELECT COUNT(*) FROM insert_" + i);
            if (n != committed[i]) {
                failures.add("insert_" + i + " holds " + n + " records, " + committed[i]
                        + " were committed");
            }
        }
        return failures;
    }

    @Override
    public void config(ObjectNode config) {
        config.put("records_per_txn", RECORDS_PER_TXN);
        config.put("value_bytes", VALUE_BYTES);
    }

    @Override
    public void pointFields(ObjectNode line, long ops, double durationS, long[] kindCounts) {
        long records = ops * RECORDS_PER_TXN;
        line.put("records", records);
        line.put("records_per_s", records / durationS);
    }
}

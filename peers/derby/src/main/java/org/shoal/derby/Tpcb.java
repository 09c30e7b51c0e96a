package org.shoal.derby;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@code tpcb} (seed 003; the Rust workload {@code tpcb.rs}): pgbench's TPC-B-like
 * transaction on its four tables with {@code scale} branches, 10 tellers and
 * {@code accountsPerBranch} (100,000 but in tests) accounts per branch, balances 0 and blank
 * fillers at load. A transaction draws {@code aid}, {@code tid}, {@code bid} uniformly and
 * {@code delta} uniformly in −5,000..=5,000 and runs
 *
 * <pre>
 * UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;
 * SELECT abalance FROM pgbench_accounts WHERE aid = ?;
 * UPDATE pgbench_tellers  SET tbalance = tbalance + ? WHERE tid = ?;
 * UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?;
 * INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, ?);
 * COMMIT
 * </pre>
 *
 * at READ COMMITTED: each UPDATE adds in place under its X row lock, so no update is lost.
 * History has no key, as in pgbench. Consistency (after every point): the sums of account,
 * teller and branch balances and of history deltas are equal.
 */
public final class Tpcb implements Workload {
    /** Tellers per branch. */
    static final long TELLERS_PER_BRANCH = 10;
    /** Largest |delta| of one transaction. */
    static final int MAX_DELTA = 5_000;
    private static final int LOAD_TXN_ROWS = 10_000;

    private final long branches;
    private final long accountsPerBranch;

    /**
     * @param scale branches
     * @param accountsPerBranch accounts per branch
     */
    public Tpcb(int scale, long accountsPerBranch) {
        this.branches = scale;
        this.accountsPerBranch = accountsPerBranch;
    }

    @Override
    public String name() {
        return "tpcb";
    }

    @Override
    public List<String> kinds() {
        return List.of("tpcb");
    }

    @Override
    public long rowsToLoad() {
        return branches * (1 + TELLERS_PER_BRANCH + accountsPerBranch);
    }

    @Override
    public void setup(Connection c, int workers, Progress progress) throws SQLException {
        Sql.exec(c, "CREATE TABLE pgbench_branches (bid INT NOT NULL, bbalance INT NOT NULL,"
                + " filler CHAR(88))");
        Sql.exec(c, "CREATE TABLE pgbench_tellers (tid INT NOT NULL, bid INT NOT NULL,"
                + " tbalance INT NOT NULL, filler CHAR(84))");
        Sql.exec(c, "CREATE TABLE pgbench_accounts (aid INT NOT NULL, bid INT NOT NULL,"
                + " abalance INT NOT NULL, filler CHAR(84))");
        Sql.exec(c, "CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT,"
                + " mtime TIMESTAMP, filler CHAR(22))");
        c.commit();
        try (PreparedStatement b = c.prepareStatement(
                     "INSERT INTO pgbench_branches VALUES (?, 0, '')");
             PreparedStatement t = c.prepareStatement(
                     "INSERT INTO pgbench_tellers VALUES (?, ?, 0, '')");
             PreparedStatement a = c.prepareStatement(
                     "INSERT INTO pgbench_accounts VALUES (?, ?, 0, '')")) {
            for (long bid = 1; bid <= branches; bid++) {
                b.setInt(1, (int) bid);
                b.addBatch();
            }
            b.executeBatch();
            for (long tid = 1; tid <= branches * TELLERS_PER_BRANCH; tid++) {
                t.setInt(1, (int) tid);
                t.setInt(2, (int) ((tid - 1) / TELLERS_PER_BRANCH + 1));
                t.addBatch();
            }
            t.executeBatch();
            c.commit();
            progress.inc(branches * (1 + TELLERS_PER_BRANCH));
            long accounts = branches * accountsPerBranch;
            for (long aid = 1; aid <= accounts; ) {
                long end = Math.min(accounts + 1, aid + LOAD_TXN_ROWS);
                for (long k = aid; k < end; k++) {
                    a.setInt(1, (int) k);
                    a.setInt(2, (int) ((k - 1) / accountsPerBranch + 1));
                    a.addBatch();
                }
                a.executeBatch();
                c.commit();
                progress.inc(end - aid);
                aid = end;
            }
        }
        Sql.exec(c, "ALTER TABLE pgbench_branches ADD CONSTRAINT branches_pk PRIMARY KEY (bid)");
        Sql.exec(c, "ALTER TABLE pgbench_tellers ADD CONSTRAINT tellers_pk PRIMARY KEY (tid)");
        Sql.exec(c, "ALTER TABLE pgbench_accounts ADD CONSTRAINT accounts_pk PRIMARY KEY (aid)");
        c.commit();
    }

    @Override
    public Worker worker(Connection c, int index) throws SQLException {
        PreparedStatement updA = c.prepareStatement(
                "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?");
        PreparedStatement selA = c.prepareStatement(
                "SELECT abalance FROM pgbench_accounts WHERE aid = ?");
        PreparedStatement updT = c.prepareStatement(
                "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?");
        PreparedStatement updB = c.prepareStatement(
                "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?");
        PreparedStatement insH = c.prepareStatement(
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, ?)");
        long accounts = branches * accountsPerBranch;
        long tellers = branches * TELLERS_PER_BRANCH;
        return new Worker() {
            @Override
            public int run(SplittableRandom rng) throws SQLException {
                int aid = (int) (1 + rng.nextLong(accounts));
                int tid = (int) (1 + rng.nextLong(tellers));
                int bid = (int) (1 + rng.nextLong(branches));
                int delta = rng.nextInt(-MAX_DELTA, MAX_DELTA + 1);
                add(updA, delta, aid, "account");
                selA.setInt(1, aid);
                try (ResultSet r = Sql.one(selA, "account " + aid)) {
                    r.getInt(1);
                }
                add(updT, delta, tid, "teller");
                add(updB, delta, bid, "branch");
                insH.setInt(1, tid);
                insH.setInt(2, bid);
                insH.setInt(3, aid);
                insH.setInt(4, delta);
                insH.setTimestamp(5, new Timestamp(System.currentTimeMillis()));
                insH.executeUpdate();
                c.commit();
                return 0;
            }

            @Override
            public void rollbackQuietly() {
                Sql.rollbackQuietly(c);
            }
        };
    }

    private static void add(PreparedStatement upd, int delta, int key, String what)
            throws SQLException {
        upd.setInt(1, delta);
        upd.setInt(2, key);
        if (upd.executeUpdate() != 1) {
            throw new SQLException("tpcb: no " + what + " " + key);
        }
    }

    /**
     * The consistency condition's failures for the four sums (empty if they agree), worded
     * as the Rust workload words them.
     *
     * @param a sum of account balances
     * @param t sum of teller balances
     * @param b sum of branch balances
     * @param h sum of history deltas
     * @return the failures
     */
    static List<String> checkSums(long a, long t, long b, long h) {
        if (a == t && t == b && b == h) {
            return List.of();
        }
        return List.of("sum(abalance) " + a + ", sum(tbalance) " + t + ", sum(bbalance) " + b
                + ", sum(history.delta) " + h + " differ");
    }

    @Override
    public List<String> check(Connection c) throws SQLException {
        return checkSums(
                Sql.queryLong(c, "SELECT COALESCE(SUM(CAST(abalance AS BIGINT)), 0) FROM pgbench_accounts"),
                Sql.queryLong(c, "SELECT COALESCE(SUM(CAST(tbalance AS BIGINT)), 0) FROM pgbench_tellers"),
                Sql.queryLong(c, "SELECT COALESCE(SUM(CAST(bbalance AS BIGINT)), 0) FROM pgbench_branches"),
                Sql.queryLong(c, "SELECT COALESCE(SUM(CAST(delta AS BIGINT)), 0) FROM pgbench_history"));
    }

    @Override
    public void config(ObjectNode config) {
        config.put("scale", branches);
        config.put("accounts_per_branch", accountsPerBranch);
        config.put("accounts", branches * accountsPerBranch);
    }

    @Override
    public void pointFields(ObjectNode line, long ops, double durationS, long[] kindCounts) {
        // tpcb derives nothing.
    }
}

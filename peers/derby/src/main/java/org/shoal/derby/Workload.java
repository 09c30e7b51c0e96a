package org.shoal.derby;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/**
 * One of the suite's workloads on Derby: its tables, its load, its transaction and its
 * consistency check. The {@link Runner} measures it (warm-up, measured interval, check).
 */
public interface Workload {
    /** @return the workload's name, the {@code bench} field of its JSON lines */
    String name();

    /**
     * The kinds of transaction a worker runs, in the order {@link Worker#run} returns their
     * index. Workloads of one kind return one name.
     *
     * @return the names of the kinds
     */
    List<String> kinds();

    /**
     * Creates and loads the tables (once per invocation, before the first point).
     *
     * @param c a connection (autocommit off)
     * @param workers the largest thread count of the run
     * @param progress where to count loaded rows
     * @throws SQLException on an engine error
     */
    void setup(Connection c, int workers, Progress progress) throws SQLException;

    /**
     * @return rows {@link #setup} loads (for progress)
     */
    long rowsToLoad();

    /**
     * Prepares worker {@code index}'s statements on its own connection.
     *
     * @param c the worker's connection (autocommit off, READ COMMITTED)
     * @param index the worker's number, 0-based
     * @return the worker
     * @throws SQLException on an engine error
     */
    Worker worker(Connection c, int index) throws SQLException;

    /**
     * Checks the workload's consistency conditions on a quiet database.
     *
     * @param c a connection
     * @return the failures; empty if every condition holds
     * @throws SQLException on an engine error
     */
    List<String> check(Connection c) throws SQLException;

    /**
     * Adds the workload's settings (sizes) to a point's {@code config}.
     *
     * @param config the config object
     */
    void config(ObjectNode config);

    /**
     * Adds the workload's derived top-level fields to a point's JSON line (e.g. tpcc's mix
     * shares, insert's records per second).
     *
     * @param line the JSON line
     * @param ops transactions done in the measured interval
     * @param durationS the measured interval in seconds
     * @param kindCounts transactions done per kind of {@link #kinds}
     */
    void pointFields(ObjectNode line, long ops, double durationS, long[] kindCounts);
}

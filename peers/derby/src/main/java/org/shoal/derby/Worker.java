package org.shoal.derby;

import java.sql.SQLException;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * One worker thread's side of a workload: its connection and prepared statements, reused for
 * every transaction of every point.
 */
public interface Worker {
    /**
     * Draws and runs one transaction, ending it with a commit (or, for TPC-C's New-Order
     * with an unused item, a rollback that counts as done).
     *
     * @param rng this worker's generator for the point
     * @return the index of the transaction's kind in {@link Workload#kinds}
     * @throws SQLException on an engine error; the runner counts a deadlock or lock timeout
     *     as an abort, anything else ends the run
     * @throws Abort when the transaction gave up for a reason retrying can cure
     */
    int run(SplittableRandom rng) throws SQLException, Abort;

    /** Rolls back whatever the worker's connection has open (after an abort). */
    void rollbackQuietly();

    /**
     * Cumulative counters of this worker for the point's {@code engine_stats} (e.g. TPC-C's
     * New-Orders rolled back on purpose); the runner reports their growth in the measured
     * interval.
     *
     * @return counter name to value
     */
    default Map<String, Long> counters() {
        return Map.of();
    }
}

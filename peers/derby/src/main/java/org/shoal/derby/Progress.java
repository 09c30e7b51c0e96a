package org.shoal.derby;

import java.io.PrintStream;

/**
 * Progress of a long step (loading rows) on standard error: at most one line a second and
 * one at the end; nothing with {@code --quiet}.
 */
public final class Progress {
    private final String label;
    private final long total;
    private final PrintStream err;
    private final long startNanos = System.nanoTime();
    private long done;
    private long lastPrintNanos = System.nanoTime();

    /**
     * @param label what is being done, e.g. {@code "tpcc: loading 1 warehouse(s)"}
     * @param total units to do (rows)
     * @param err where to print; {@code null} for nothing
     */
    public Progress(String label, long total, PrintStream err) {
        this.label = label;
        this.total = total;
        this.err = err;
    }

    /**
     * Counts {@code n} more units done.
     *
     * @param n units done since the last call
     */
    public void inc(long n) {
        done += n;
        long now = System.nanoTime();
        if (err != null && now - lastPrintNanos >= 1_000_000_000L) {
            lastPrintNanos = now;
            err.printf("%s: %d/%d rows (%.0f%%)%n", label, done, total,
                    total == 0 ? 100.0 : 100.0 * done / total);
        }
    }

    /** Prints the closing line: units done and the time taken. */
    public void finish() {
        if (err != null) {
            err.printf("%s: %d rows in %.1f s%n", label, done,
                    (System.nanoTime() - startNanos) / 1e9);
        }
    }
}

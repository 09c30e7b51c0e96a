package org.shoal.derby;

import java.util.Arrays;

/**
 * Latencies of transactions in nanoseconds, one growable array per worker (no sharing while
 * measuring), merged after the point for the percentiles.
 */
final class Latencies {
    private long[] ns = new long[1024];
    private int n;

    /** @param v one transaction's latency in nanoseconds */
    void add(long v) {
        if (n == ns.length) {
            ns = Arrays.copyOf(ns, n * 2);
        }
        ns[n++] = v;
    }

    /** @return the number of latencies recorded */
    int size() {
        return n;
    }

    /**
     * @param parts every worker's latencies
     * @return all of them, sorted ascending
     */
    static long[] mergeSorted(Latencies[] parts) {
        int total = 0;
        for (Latencies p : parts) {
            total += p.n;
        }
        long[] all = new long[total];
        int at = 0;
        for (Latencies p : parts) {
            System.arraycopy(p.ns, 0, all, at, p.n);
            at += p.n;
        }
        Arrays.sort(all);
        return all;
    }

    /**
     * The nearest-rank quantile: the smallest value with at least {@code q} of the values at
     * or below it.
     *
     * @param sorted values sorted ascending, not empty
     * @param q the quantile, 0 to 1
     * @return the value
     */
    static long quantile(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
    }
}

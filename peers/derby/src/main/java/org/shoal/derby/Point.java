package org.shoal.derby;

import java.sql.SQLException;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Measuring one point: {@code threads} workers run transactions back to back through a
 * warm-up (not counted) and the measured interval, as the Rust runner does.
 *
 * <pre>
 *  READY ──all workers at the gate──► WARMUP ──warmup_s──► MEASURE ──duration_s──► STOP
 *                                      run, count nothing     run, count ops,        leave
 *                                                             latencies, aborts
 * </pre>
 *
 * <p>Rules (the Rust runner's): 1. the measured time runs from the switch to MEASURE to the
 * switch to STOP; a transaction a worker began in MEASURE counts even if it ends after STOP.
 * 2. Every counted transaction's latency is recorded (no sampling). 3. An aborted transaction
 * (deadlock, lock timeout, {@link Abort}) is rolled back and counted by cause, not in ops.
 * 4. Any other error stops every worker and is thrown from {@link #measure}.
 */
final class Point {
    private static final int READY = 0;
    private static final int WARMUP = 1;
    private static final int MEASURE = 2;
    private static final int STOP = 3;
    /** Mixes the thread index into the seed (the Rust runner's constant). */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    /**
     * What one point measured.
     *
     * @param durationS the measured interval in seconds
     * @param opsByThread transactions done per worker
     * @param latenciesNs every counted transaction's latency, sorted
     * @param aborts aborted transactions by cause
     * @param kindCounts transactions done per kind
     * @param counters growth of the workers' counters in the measured interval
     * @param cpuNanos CPU time spent in the measured interval, if it could be read
     */
    record Result(double durationS, long[] opsByThread, long[] latenciesNs,
            Map<String, Long> aborts, long[] kindCounts, Map<String, Long> counters,
            OptionalLong cpuNanos) {
        /** @return transactions done by all workers */
        long ops() {
            long s = 0;
            for (long o : opsByThread) {
                s += o;
            }
            return s;
        }
    }

    /** One worker thread's tallies. */
    private static final class Slot {
        long ops;
        final Latencies latencies = new Latencies();
        final Map<String, Long> aborts = new TreeMap<>();
        final long[] kinds;
        final Map<String, Long> counters = new TreeMap<>();
        volatile Throwable error;

        Slot(int kindCount) {
            kinds = new long[kindCount];
        }
    }

    private Point() {}

    /**
     * Measures one point with the first {@code threads} workers.
     *
     * @param workers the workers (at least {@code threads})
     * @param threads how many run
     * @param kindCount number of transaction kinds
     * @param warmupS warm-up seconds
     * @param durationS measured seconds
     * @param seed the run's seed (worker i draws from seed mixed with i)
     * @param cpu reads the CPU time of the processes doing the work
     * @return the result
     * @throws Exception the first error a worker hit
     */
    static Result measure(Worker[] workers, int threads, int kindCount, double warmupS,
            double durationS, long seed, Supplier<OptionalLong> cpu) throws Exception {
        AtomicInteger phase = new AtomicInteger(READY);
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        Slot[] slots = new Slot[threads];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            Slot slot = new Slot(kindCount);
            slots[i] = slot;
            Worker w = workers[i];
            SplittableRandom rng = new SplittableRandom(seed ^ ((i + 1L) * GOLDEN));
            ts[i] = new Thread(() -> {
                try {
                    ready.countDown();
                    go.await();
                    work(w, rng, phase, slot);
                } catch (Throwable t) {
                    slot.error = t;
                    phase.set(STOP);
                }
            }, "derby-worker-" + i);
            ts[i].start();
        }
        ready.await();
        phase.set(WARMUP);
        go.countDown();
        sleepUnlessStopped(warmupS, phase);
        OptionalLong cpuBefore = cpu.get();
        boolean measuring = phase.compareAndSet(WARMUP, MEASURE);
        long start = System.nanoTime();
        if (measuring) {
            sleepUnlessStopped(durationS, phase);
        }
        phase.set(STOP);
        double duration = (System.nanoTime() - start) / 1e9;
        OptionalLong cpuAfter = cpu.get();
        for (Thread t : ts) {
            t.join();
        }
        for (Slot s : slots) {
            if (s.error instanceof Exception e) {
                throw e;
            } else if (s.error != null) {
                throw new RuntimeException("worker failed", s.error);
            }
        }
        long[] ops = new long[threads];
        Latencies[] lat = new Latencies[threads];
        Map<String, Long> aborts = new TreeMap<>();
        long[] kinds = new long[kindCount];
        Map<String, Long> counters = new TreeMap<>();
        for (int i = 0; i < threads; i++) {
            ops[i] = slots[i].ops;
            lat[i] = slots[i].latencies;
            slots[i].aborts.forEach((k, v) -> aborts.merge(k, v, Long::sum));
            slots[i].counters.forEach((k, v) -> counters.merge(k, v, Long::sum));
            for (int k = 0; k < kindCount; k++) {
                kinds[k] += slots[i].kinds[k];
            }
        }
        OptionalLong cpuNanos = cpuBefore.isPresent() && cpuAfter.isPresent()
                ? OptionalLong.of(cpuAfter.getAsLong() - cpuBefore.getAsLong())
                : OptionalLong.empty();
        return new Result(duration, ops, Latencies.mergeSorted(lat), aborts, kinds, counters,
                cpuNanos);
    }

    private static void work(Worker w, SplittableRandom rng, AtomicInteger phase, Slot slot)
            throws SQLException {
        while (phase.get() == WARMUP) {
            one(w, rng, slot, false);
        }
        Map<String, Long> before = w.counters();
        while (phase.get() == MEASURE) {
            one(w, rng, slot, true);
        }
        w.counters().forEach((k, v) -> slot.counters.put(k, v - before.getOrDefault(k, 0L)));
    }

    private static void one(Worker w, SplittableRandom rng, Slot slot, boolean counting)
            throws SQLException {
        long start = System.nanoTime();
        try {
            int kind = w.run(rng);
            long ns = System.nanoTime() - start;
            if (counting) {
                slot.ops++;
                slot.latencies.add(ns);
                slot.kinds[kind]++;
            }
        } catch (Abort a) {
            w.rollbackQuietly();
            if (counting) {
                slot.aborts.merge(a.cause(), 1L, Long::sum);
            }
        } catch (SQLException e) {
            w.rollbackQuietly();
            String cause = SqlStates.abortCause(e);
            if (cause == null) {
                throw e;
            }
            if (counting) {
                slot.aborts.merge(cause, 1L, Long::sum);
            }
        }
    }

    private static void sleepUnlessStopped(double seconds, AtomicInteger phase)
            throws InterruptedException {
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (phase.get() != STOP) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            Thread.sleep(Math.max(1, Math.min(50, left / 1_000_000)));
        }
    }
}

package org.shoal.derby;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * One invocation: set up and load the workload once, open one connection per worker, then
 * for each thread count measure a point ({@link Point}), check the workload's consistency
 * conditions outside the measured time, and print the point's JSON line on standard output.
 */
final class Runner {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Options opts;
    private final Engine engine;
    private final Workload workload;
    private final PrintStream out;
    private final PrintStream err;

    /**
     * @param opts the run's options
     * @param engine Derby, booted
     * @param workload the workload
     * @param out where the JSON lines go
     * @param err where progress goes; {@code null} for nothing
     */
    Runner(Options opts, Engine engine, Workload workload, PrintStream out, PrintStream err) {
        this.opts = opts;
        this.engine = engine;
        this.workload = workload;
        this.out = out;
        this.err = err;
    }

    /**
     * Runs every point.
     *
     * @return true if every point's consistency check passed
     * @throws Exception on an engine error
     */
    boolean run() throws Exception {
        List<Connection> conns = new ArrayList<>();
        Connection admin = engine.connect();
        conns.add(admin);
        try {
            String version = admin.getMetaData().getDatabaseProductVersion();
            Progress progress = new Progress(
                    workload.name() + " " + opts.engineName() + ": loading",
                    workload.rowsToLoad(), err);
            workload.setup(admin, opts.maxThreads(), progress);
            progress.finish();
            Worker[] workers = new Worker[opts.maxThreads()];
            for (int i = 0; i < workers.length; i++) {
                Connection c = engine.connect();
                conns.add(c);
                workers[i] = workload.worker(c, i);
            }
            boolean allPass = true;
            for (int threads : opts.threads) {
                Point.Result r = Point.measure(workers, threads, workload.kinds().size(),
                        opts.warmupS, opts.durationS, opts.seed, this::cpuNanos);
                List<String> failures = workload.check(admin);
                admin.commit();
                allPass &= failures.isEmpty();
                ObjectNode line = line(threads, r, failures, version);
                out.println(JSON.writeValueAsString(line));
                out.flush();
                if (err != null) {
                    err.printf("%s %s %s: %d threads, %.0f ops/s, aborts %s, consistency %s%n",
                            workload.name(), opts.variant, opts.engineName(), threads,
                            line.get("ops_per_s").asDouble(), r.aborts(),
                            line.get("consistency").asText());
                }
            }
            return allPass;
        } finally {
            for (Connection c : conns) {
                closeQuietly(c);
            }
        }
    }

    private ObjectNode line(int threads, Point.Result r, List<String> failures, String version) {
        ObjectNode m = JSON.createObjectNode();
        long ops = r.ops();
        m.put("bench", workload.name());
        m.put("engine", opts.engineName());
        m.put("variant", opts.variant);
        m.put("threads", threads);
        m.put("duration_s", r.durationS());
        m.put("ops", ops);
        double perS = ops / r.durationS();
        m.put("ops_per_s", perS);
        m.put("ops_per_s_per_thread", perS / threads);
        ArrayNode byThread = m.putArray("ops_by_thread");
        for (long o : r.opsByThread()) {
            byThread.add(o);
        }
        long[] lat = r.latenciesNs();
        for (String[] q : new String[][] {{"p50_us", "0.5"}, {"p95_us", "0.95"},
                {"p99_us", "0.99"}, {"max_us", "1"}}) {
            if (lat.length == 0) {
                m.putNull(q[0]);
            } else {
                m.put(q[0], Latencies.quantile(lat, Double.parseDouble(q[1])) / 1000.0);
            }
        }
        m.put("latency_samples", lat.length);
        ObjectNode aborts = m.putObject("aborts");
        r.aborts().forEach(aborts::put);
        if (r.cpuNanos().isPresent() && ops > 0) {
            m.put("cpu_s_per_op", r.cpuNanos().getAsLong() / 1e9 / ops);
        } else {
            m.putNull("cpu_s_per_op");
        }
        OptionalLong rss = maxRssBytes();
        if (rss.isPresent()) {
            m.put("max_rss_bytes", rss.getAsLong());
        } else {
            m.putNull("max_rss_bytes");
        }
        ObjectNode stats = m.putObject("engine_stats");
        r.counters().forEach(stats::put);
        m.put("consistency", failures.isEmpty() ? "pass" : "FAIL: " + String.join("; ", failures));
        workload.pointFields(m, ops, r.durationS(), r.kindCounts());
        m.set("config", config(version));
        return m;
    }

    private ObjectNode config(String version) {
        ObjectNode c = JSON.createObjectNode();
        c.put("durability", opts.durability);
        c.put("pool_size_bytes", opts.poolBytes);
        c.put("page_cache_pages", Engine.cachePages(opts.poolBytes));
        c.put("page_size_bytes", Engine.PAGE_BYTES);
        c.put("mode", opts.mode == Options.Mode.EMBEDDED ? "embedded" : "network");
        c.put("derby_version", version);
        c.put("java_version", System.getProperty("java.version"));
        workload.config(c);
        c.put("warmup_s", opts.warmupS);
        c.put("duration_s_requested", opts.durationS);
        c.put("seed", opts.seed);
        ArrayNode tl = c.putArray("threads_list");
        for (int t : opts.threads) {
            tl.add(t);
        }
        c.put("latency_sample_every", 1);
        boolean net = engine.serverPid().isPresent();
        c.put("cpu_scope", net ? "client and server JVMs" : "process");
        c.put("max_rss_scope", net
                ? "client JVM peak + server JVM peak, since process start"
                : "process, since process start");
        c.put("isolation", "READ COMMITTED");
        ObjectNode props = c.putObject("derby_properties");
        for (Map.Entry<String, String> p : engine.derbyProperties().entrySet()) {
            props.put(p.getKey(), p.getValue());
        }
        return c;
    }

    /** CPU time of this JVM plus, in network mode, the server's JVM. */
    private OptionalLong cpuNanos() {
        OptionalLong own = ProcStats.ownCpuNanos();
        OptionalLong pid = engine.serverPid();
        if (own.isEmpty() || pid.isEmpty()) {
            return own;
        }
        OptionalLong server = ProcStats.cpuNanosOf(pid.getAsLong());
        return server.isPresent()
                ? OptionalLong.of(own.getAsLong() + server.getAsLong())
                : OptionalLong.empty();
    }

    private OptionalLong maxRssBytes() {
        OptionalLong own = ProcStats.maxRssBytes("self");
        OptionalLong pid = engine.serverPid();
        if (own.isEmpty() || pid.isEmpty()) {
            return own;
        }
        OptionalLong server = ProcStats.maxRssBytes(Long.toString(pid.getAsLong()));
        return server.isPresent()
                ? OptionalLong.of(own.getAsLong() + server.getAsLong())
                : OptionalLong.empty();
    }

    private static void closeQuietly(Connection c) {
        try {
            if (!c.isClosed()) {
                c.rollback();
                c.close();
            }
        } catch (SQLException e) {
            // Closing after the run: nothing left to report.
        }
    }
}

package org.shoal.derby;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The command line of the harness (the contract the Rust side relies on; README.md lists it).
 * Every flag takes a value ({@code --flag value} or {@code --flag=value}) except
 * {@code --quiet}.
 */
public final class Options {
    /** How the harness reaches Derby. */
    public enum Mode {
        /** Derby's engine inside this JVM ({@code jdbc:derby:DIR/db}). */
        EMBEDDED,
        /** Derby's network server in a child JVM on 127.0.0.1 ({@code jdbc:derby://...}). */
        NETWORK
    }

    /** Rows per unit of {@code --scale} of select1, and accounts per branch of tpcb. */
    public static final long DEFAULT_ROWS_PER_SCALE = 100_000;

    /** Embedded or network. */
    public Mode mode;
    /** select1, tpcb, insert or tpcc. */
    public String workload;
    /** The workload's variant (tpcc: standard, payment, new-order; the others: their name). */
    public String variant;
    /** Thread counts, measured in this order. */
    public int[] threads = {1};
    /** Warm-up seconds before each measured interval. */
    public double warmupS = 0.5;
    /** Measured seconds per point. */
    public double durationS = 2.0;
    /** Seed of every random draw (load and transactions). */
    public long seed = 42;
    /** {@code full} (commit syncs the log) or {@code lazy} ({@code derby.system.durability=test}). */
    public String durability = "full";
    /** Page cache size in bytes ({@code derby.storage.pageCacheSize} = this / 4096 pages). */
    public long poolBytes = 64L << 20;
    /** select1: units of {@code rowsPerScale} rows; tpcb: branches. */
    public int scale = 1;
    /** tpcc warehouses. */
    public int warehouses = 1;
    /** tpcc population: {@code full} (the spec's) or {@code tiny} (for tests). */
    public String tpccScale = "full";
    /** select1 rows per scale unit and tpcb accounts per branch (tests shrink it). */
    public long rowsPerScale = DEFAULT_ROWS_PER_SCALE;
    /** Directory the database lives in ({@code DIR/db}); must exist. */
    public Path dbDir;
    /** No progress on standard error. */
    public boolean quiet;

    /** The variants of each workload; the first is the default. */
    static final Map<String, List<String>> VARIANTS = Map.of(
            "select1", List.of("select1"),
            "tpcb", List.of("tpcb"),
            "insert", List.of("insert"),
            "tpcc", List.of("standard", "payment", "new-order"));

    private Options() {}

    /** The usage text, printed for {@code --help}. */
    public static final String USAGE = String.join("\n",
            "usage: java -jar shoal-derby-peer.jar --mode embedded|network",
            "    --workload select1|tpcb|insert|tpcc --db-dir DIR [--variant NAME]",
            "    [--threads 1,2,4] [--warmup-s 0.5] [--duration-s 2] [--seed 42]",
            "    [--durability full|lazy] [--pool-bytes 67108864] [--scale 1] [--warehouses 1]",
            "    [--tpcc-scale full|tiny] [--rows-per-scale 100000] [--quiet]",
            "One JSON line per measured point on standard output; progress on standard error.");

    /**
     * Parses the arguments.
     *
     * @param args the command line
     * @return the options; {@code null} if {@code --help} was asked for
     * @throws UsageError naming the first bad or missing flag
     */
    public static Options parse(String[] args) throws UsageError {
        Map<String, String> given = new HashMap<>();
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help") || a.equals("-h")) {
                return null;
            }
            if (a.equals("--quiet")) {
                o.quiet = true;
                continue;
            }
            if (!a.startsWith("--")) {
                throw new UsageError(a, "unexpected argument (flags start with --)");
            }
            String flag = a;
            String value;
            int eq = a.indexOf('=');
            if (eq > 0) {
                flag = a.substring(0, eq);
                value = a.substring(eq + 1);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new UsageError(flag, "needs a value");
            }
            if (given.put(flag, value) != null) {
                throw new UsageError(flag, "given twice");
            }
        }
        o.apply(given);
        return o;
    }

    private void apply(Map<String, String> given) throws UsageError {
        Map<String, String> g = new HashMap<>(given);
        String m = require(g, "--mode");
        mode = switch (m) {
            case "embedded" -> Mode.EMBEDDED;
            case "network" -> Mode.NETWORK;
            default -> throw new UsageError("--mode", "`" + m + "` is not embedded or network");
        };
        workload = require(g, "--workload");
        List<String> variants = VARIANTS.get(workload);
        if (variants == null) {
            throw new UsageError("--workload",
                    "`" + workload + "` is not select1, tpcb, insert or tpcc");
        }
        variant = g.containsKey("--variant") ? g.remove("--variant") : variants.get(0);
        if (!variants.contains(variant)) {
            throw new UsageError("--variant",
                    "`" + variant + "` is not a variant of " + workload + " " + variants);
        }
        String dir = require(g, "--db-dir");
        dbDir = Path.of(dir).toAbsolutePath().normalize();
        if (!Files.isDirectory(dbDir)) {
            throw new UsageError("--db-dir", dir + " is not an existing directory");
        }
        if (Files.exists(dbDir.resolve("db"))) {
            throw new UsageError("--db-dir", dbDir.resolve("db") + " already exists");
        }
        if (g.containsKey("--threads")) {
            threads = parseThreads(g.remove("--threads"));
        }
        if (g.containsKey("--warmup-s")) {
            warmupS = parseSeconds("--warmup-s", g.remove("--warmup-s"), true);
        }
        if (g.containsKey("--duration-s")) {
            durationS = parseSeconds("--duration-s", g.remove("--duration-s"), false);
        }
        if (g.containsKey("--seed")) {
            seed = parseLong("--seed", g.remove("--seed"), Long.MIN_VALUE);
        }
        if (g.containsKey("--durability")) {
            durability = g.remove("--durability");
            if (!durability.equals("full") && !durability.equals("lazy")) {
                throw new UsageError("--durability", "`" + durability + "` is not full or lazy");
            }
        }
        if (g.containsKey("--pool-bytes")) {
            poolBytes = parseLong("--pool-bytes", g.remove("--pool-bytes"), 1);
        }
        if (g.containsKey("--scale")) {
            scale = (int) parseLong("--scale", g.remove("--scale"), 1, 100_000);
        }
        if (g.containsKey("--warehouses")) {
            warehouses = (int) parseLong("--warehouses", g.remove("--warehouses"), 1, 1_000);
        }
        if (g.containsKey("--tpcc-scale")) {
            tpccScale = g.remove("--tpcc-scale");
            if (!tpccScale.equals("full") && !tpccScale.equals("tiny")) {
                throw new UsageError("--tpcc-scale", "`" + tpccScale + "` is not full or tiny");
            }
        }
        if (g.containsKey("--rows-per-scale")) {
            rowsPerScale = parseLong("--rows-per-scale", g.remove("--rows-per-scale"), 1,
                    1_000_000_000);
        }
        if ((long) scale * rowsPerScale > Integer.MAX_VALUE) {
            throw new UsageError("--scale", scale + " × " + rowsPerScale
                    + " rows is over the INT keys' range");
        }
        if (!g.isEmpty()) {
            String flag = g.keySet().iterator().next();
            throw new UsageError(flag, "unknown flag");
        }
    }

    private static String require(Map<String, String> g, String flag) throws UsageError {
        String v = g.remove(flag);
        if (v == null || v.isEmpty()) {
            throw new UsageError(flag, "is required");
        }
        return v;
    }

    private static int[] parseThreads(String s) throws UsageError {
        List<Integer> out = new ArrayList<>();
        for (String part : s.split(",")) {
            out.add((int) parseLong("--threads", part.trim(), 1, 4096));
        }
        if (out.isEmpty()) {
            throw new UsageError("--threads", "names no thread count");
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    private static double parseSeconds(String flag, String s, boolean zeroOk) throws UsageError {
        double v;
        try {
            v = Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw new UsageError(flag, "`" + s + "` is not a number of seconds");
        }
        if (!Double.isFinite(v) || v < 0 || (!zeroOk && v == 0)) {
            throw new UsageError(flag, "`" + s + "` is out of range");
        }
        return v;
    }

    private static long parseLong(String flag, String s, long min) throws UsageError {
        return parseLong(flag, s, min, Long.MAX_VALUE);
    }

    private static long parseLong(String flag, String s, long min, long max) throws UsageError {
        long v;
        try {
            v = Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new UsageError(flag, "`" + s + "` is not an integer");
        }
        if (v < min || v > max) {
            throw new UsageError(flag, v + " is not in " + min + ".." + max);
        }
        return v;
    }

    /** @return the largest thread count: the workers (and connections) setup must serve */
    public int maxThreads() {
        int m = 1;
        for (int t : threads) {
            m = Math.max(m, t);
        }
        return m;
    }

    /** @return the engine name of the JSON lines: derby-embedded or derby-network */
    public String engineName() {
        return mode == Mode.EMBEDDED ? "derby-embedded" : "derby-network";
    }
}

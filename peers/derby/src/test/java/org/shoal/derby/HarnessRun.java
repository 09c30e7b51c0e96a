package org.shoal.derby;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the harness in a child JVM, as the Rust side does, and parses its JSON lines. */
final class HarnessRun {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The fields every line must carry (the Rust side's required fields and more). */
    static final String[] REQUIRED = {
        "bench", "engine", "variant", "threads", "duration_s", "ops", "ops_per_s",
        "ops_per_s_per_thread", "ops_by_thread", "p50_us", "p95_us", "p99_us", "max_us",
        "latency_samples", "aborts", "cpu_s_per_op", "max_rss_bytes", "engine_stats",
        "consistency", "config",
    };

    final int status;
    final List<JsonNode> lines = new ArrayList<>();
    final String stderr;

    private HarnessRun(int status, String stdout, String stderr) throws IOException {
        this.status = status;
        this.stderr = stderr;
        for (String line : stdout.split("\n")) {
            if (!line.isBlank()) {
                lines.add(JSON.readTree(line));
            }
        }
    }

    /**
     * Runs {@code java -cp <this class path> org.shoal.derby.Main args...}.
     *
     * @param dbDir the database directory (exists, empty)
     * @param args the other arguments
     * @return the run
     */
    static HarnessRun run(Path dbDir, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "org.shoal.derby.Main",
                "--db-dir", dbDir.toString()));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("harness", ".out");
        Path err = Files.createTempFile("harness", ".err");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile())
                .redirectError(err.toFile()).start();
        if (!p.waitFor(150, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the harness did not finish: " + cmd);
        }
        HarnessRun r = new HarnessRun(p.exitValue(),
                Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
        Files.delete(out);
        Files.delete(err);
        return r;
    }

    /**
     * Asserts the run exited 0 with one passing line per thread count, each with every
     * required field and some transactions done.
     *
     * @param bench the expected bench
     * @param engine the expected engine
     * @param threads the thread counts asked for
     */
    void assertPassed(String bench, String engine, int... threads) {
        assertEquals(0, status, "exit status; stderr: " + stderr);
        assertEquals(threads.length, lines.size(), "one line per point; stderr: " + stderr);
        for (int i = 0; i < threads.length; i++) {
            JsonNode m = lines.get(i);
            for (String f : REQUIRED) {
                assertTrue(m.has(f), "missing " + f + " in " + m);
            }
            assertEquals(bench, m.get("bench").asText());
            assertEquals(engine, m.get("engine").asText());
            assertEquals(threads[i], m.get("threads").asInt());
            assertEquals(threads[i], m.get("ops_by_thread").size());
            assertTrue(m.get("ops").asLong() > 0, "no transaction done: " + m);
            assertTrue(m.get("duration_s").asDouble() > 0);
            assertTrue(m.get("p50_us").isNumber() && m.get("p99_us").asDouble() > 0, m.toString());
            assertEquals(m.get("ops").asLong(), m.get("latency_samples").asLong());
            assertEquals("pass", m.get("consistency").asText(), m.toString());
            assertTrue(m.get("aborts").isObject());
            assertTrue(m.get("cpu_s_per_op").isNumber(), m.toString());
            assertTrue(m.get("max_rss_bytes").asLong() > 0, m.toString());
            JsonNode cfg = m.get("config");
            for (String f : new String[] {"durability", "pool_size_bytes", "page_cache_pages",
                    "mode", "derby_version", "warmup_s", "duration_s_requested", "seed",
                    "threads_list", "derby_properties"}) {
                assertTrue(cfg.has(f), "config lacks " + f + ": " + cfg);
            }
        }
    }
}

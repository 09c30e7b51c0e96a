package org.shoal.derby;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each workload at a tiny size for a fraction of a second, in child JVMs as the Rust side
 * runs the harness: the JSON lines carry every field, transactions were done, and the
 * consistency checks pass.
 */
class WorkloadsTest {
    private static final String[] SHORT = {
        "--threads", "1,2", "--warmup-s", "0.1", "--duration-s", "0.4", "--seed", "7",
        "--durability", "lazy", "--pool-bytes", "8388608", "--quiet",
    };

    private static String[] args(String... more) {
        String[] a = new String[SHORT.length + more.length];
        System.arraycopy(SHORT, 0, a, 0, SHORT.length);
        System.arraycopy(more, 0, a, SHORT.length, more.length);
        return a;
    }

    @Test
    void select1Embedded(@TempDir Path dir) throws Exception {
        HarnessRun r = HarnessRun.run(dir, args("--mode", "embedded", "--workload", "select1",
                "--variant", "select1", "--scale", "2", "--rows-per-scale", "1000"));
        r.assertPassed("select1", "derby-embedded", 1, 2);
        assertEquals(2000, r.lines.get(0).get("config").get("rows").asLong());
        assertEquals("", r.stderr, "--quiet prints nothing");
    }

    @Test
    void tpcbEmbedded(@TempDir Path dir) throws Exception {
        HarnessRun r = HarnessRun.run(dir, args("--mode", "embedded", "--workload", "tpcb",
                "--rows-per-scale", "2000"));
        r.assertPassed("tpcb", "derby-embedded", 1, 2);
        assertEquals(2000, r.lines.get(1).get("config").get("accounts").asLong());
    }

    @Test
    void insertEmbedded(@TempDir Path dir) throws Exception {
        HarnessRun r = HarnessRun.run(dir, args("--mode", "embedded", "--workload", "insert"));
        r.assertPassed("insert", "derby-embedded", 1, 2);
        for (JsonNode m : r.lines) {
            assertEquals(m.get("ops").asLong() * 1000, m.get("records").asLong());
            assertTrue(m.get("records_per_s").asDouble() > 0);
        }
    }

    @Test
    void tpccStandardEmbedded(@TempDir Path dir) throws Exception {
        HarnessRun r = HarnessRun.run(dir, args("--mode", "embedded", "--workload", "tpcc",
                "--variant", "standard", "--warehouses", "2", "--tpcc-scale", "tiny"));
        r.assertPassed("tpcc", "derby-embedded", 1, 2);
        for (JsonNode m : r.lines) {
            double sum = 0;
            for (String k : new String[] {"new_order", "payment", "order_status", "delivery",
                    "stock_level"}) {
                assertTrue(m.get("mix_" + k).isNumber(), m.toString());
                sum += m.get("mix_" + k).asDouble();
                assertTrue(m.get("engine_stats").has("tpcc." + k), m.toString());
            }
            assertEquals(1.0, sum, 1e-9);
            assertEquals(2, m.get("config").get("warehouses").asInt());
        }
    }

    @Test
    void tpccNewOrderNetwork(@TempDir Path dir) throws Exception {
        HarnessRun r = HarnessRun.run(dir, args("--mode", "network", "--workload", "tpcc",
                "--variant", "new-order", "--tpcc-scale", "tiny"));
        r.assertPassed("tpcc", "derby-network", 1, 2);
        JsonNode m = r.lines.get(1);
        assertEquals(1.0, m.get("mix_new_order").asDouble(), 1e-9);
        assertEquals("network", m.get("config").get("mode").asText());
        assertTrue(m.get("config").get("cpu_scope").asText().contains("server"));
    }
}

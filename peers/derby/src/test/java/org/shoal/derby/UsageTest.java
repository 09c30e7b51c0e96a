package org.shoal.derby;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad or missing arguments: exit status 2, a message naming the flag, nothing on stdout. */
class UsageTest {
    private static void assertUsageError(String flag, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String msg = err.toString(StandardCharsets.UTF_8);
        assertEquals(Main.USAGE_ERROR, status, msg);
        assertTrue(msg.contains(flag), "message does not name " + flag + ": " + msg);
        assertEquals(0, out.size(), "stdout must stay empty");
    }

    @Test
    void missingAndBadFlagsAreNamed(@TempDir Path dir) {
        String d = dir.toString();
        assertUsageError("--mode", "--workload", "tpcb", "--db-dir", d);
        assertUsageError("--mode", "--mode", "remote", "--workload", "tpcb", "--db-dir", d);
        assertUsageError("--workload", "--mode", "embedded", "--workload", "tpcd", "--db-dir", d);
        assertUsageError("--variant", "--mode", "embedded", "--workload", "tpcc",
                "--variant", "delivery", "--db-dir", d);
        assertUsageError("--db-dir", "--mode", "embedded", "--workload", "tpcb");
        assertUsageError("--db-dir", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", dir.resolve("missing").toString());
        assertUsageError("--threads", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", d, "--threads", "1,x");
        assertUsageError("--threads", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", d, "--threads", "0");
        assertUsageError("--duration-s", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", d, "--duration-s", "0");
        assertUsageError("--durability", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", d, "--durability", "sometimes");
        assertUsageError("--tpcc-scale", "--mode", "embedded", "--workload", "tpcc",
                "--db-dir", d, "--tpcc-scale", "huge");
        assertUsageError("--frobnicate", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", d, "--frobnicate", "1");
        assertUsageError("--scale", "--mode", "embedded", "--workload", "select1",
                "--db-dir", d, "--scale", "30000");
        assertUsageError("--seed", "--mode", "embedded", "--workload", "tpcb",
                "--db-dir", d, "--seed");
    }

    @Test
    void defaultsAndForms(@TempDir Path dir) throws UsageError {
        Options o = Options.parse(new String[] {"--mode=network", "--workload", "tpcc",
            "--db-dir", dir.toString(), "--threads", "1,2,4", "--quiet"});
        assertEquals(Options.Mode.NETWORK, o.mode);
        assertEquals("standard", o.variant);
        assertEquals(4, o.maxThreads());
        assertTrue(o.quiet);
        assertEquals("derby-network", o.engineName());
        assertEquals(16384, Engine.cachePages(64L << 20));
        assertEquals(40, Engine.cachePages(4096));
    }
}

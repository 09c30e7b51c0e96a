package org.shoal.derby;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Process readings for the JSON lines: CPU time and peak resident set size, of this JVM and
 * (in network mode) of the server's JVM. A reading that cannot be taken is empty, never 0.
 */
final class ProcStats {
    private static volatile long clockTicksPerSecond;

    private ProcStats() {}

    /** @return this JVM's CPU time (user + system, all threads) in nanoseconds */
    static OptionalLong ownCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os) {
            long t = os.getProcessCpuTime();
            return t >= 0 ? OptionalLong.of(t) : OptionalLong.empty();
        }
        return OptionalLong.empty();
    }

    /**
     * @param pid another process
     * @return its CPU time (utime + stime of /proc/PID/stat) in nanoseconds
     */
    static OptionalLong cpuNanosOf(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"),
                    StandardCharsets.US_ASCII);
            // Fields after the command name (which may hold spaces) start at field 3 (state).
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" +");
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
            return OptionalLong.of(ticks * 1_000_000_000L / clockTicks());
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    /**
     * @param pid a process id, or {@code "self"}
     * @return the peak resident set size (VmHWM) in bytes
     */
    static OptionalLong maxRssBytes(String pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith("VmHWM:")) {
                    String kb = line.substring(6).trim().split("\\s+")[0];
                    return OptionalLong.of(Long.parseLong(kb) * 1024);
                }
            }
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
        return OptionalLong.empty();
    }

    /** The kernel's clock ticks per second (getconf CLK_TCK; 100 if it cannot be asked). */
    private static long clockTicks() {
        long t = clockTicksPerSecond;
        if (t > 0) {
            return t;
        }
        t = 100;
        try {
            Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            if (p.waitFor() == 0) {
                t = Long.parseLong(out.trim());
            }
        } catch (IOException | RuntimeException e) {
            // Keep 100, Linux's USER_HZ on every common architecture.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        clockTicksPerSecond = t;
        return t;
    }
}

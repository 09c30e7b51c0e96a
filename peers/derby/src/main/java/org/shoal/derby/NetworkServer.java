package org.shoal.derby;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.derby.drda.NetworkServerControl;

/**
 * Derby's network server in a child JVM, private to one run: it listens on 127.0.0.1 only,
 * on a free port, with its system home in the run's database directory and the run's Derby
 * properties. {@link #close} shuts it down (and kills it if it does not go), and a shutdown
 * hook kills it if this JVM exits first.
 *
 * <p>The child runs {@code java -cp <this JVM's class path> -D... NetworkServerControl start -h
 * 127.0.0.1 -p PORT -noSecurityManager}: the class path is this harness's jar (or, in tests,
 * its classes and dependencies), which holds derbynet; Derby's default security policy names
 * its own jars, which a single jar does not have, so the server runs without it (it is bound to
 * 127.0.0.1 and lives for one run).
 */
final class NetworkServer implements AutoCloseable {
    private static final String HOST = "127.0.0.1";
    private static final long START_TIMEOUT_MS = 120_000;
    private static final int START_ATTEMPTS = 3;

    private final Process process;
    private final int port;
    private final Path logFile;
    private final Thread killer;

    private NetworkServer(Process process, int port, Path logFile) {
        this.process = process;
        this.port = port;
        this.logFile = logFile;
        this.killer = new Thread(process::destroyForcibly, "derby-server-killer");
        Runtime.getRuntime().addShutdownHook(killer);
    }

    /**
     * Starts the server and waits until it answers a ping.
     *
     * @param home its {@code derby.system.home} (the run's database directory)
     * @param props Derby system properties for its JVM
     * @param err where to report the start; {@code null} for nothing
     * @return the running server
     * @throws IOException if it could not be started or did not answer
     */
    static NetworkServer start(Path home, Map<String, String> props, PrintStream err)
            throws IOException {
        IOException last = null;
        for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
            int port = freePort();
            Path log = home.resolve("derby-server-" + port + ".log");
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add("-Dderby.system.home=" + home);
            for (Map.Entry<String, String> p : props.entrySet()) {
                cmd.add("-D" + p.getKey() + "=" + p.getValue());
            }
            cmd.add("org.apache.derby.drda.NetworkServerControl");
            cmd.addAll(List.of("start", "-h", HOST, "-p", Integer.toString(port),
                    "-noSecurityManager"));
            Process proc = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            NetworkServer s = new NetworkServer(proc, port, log);
            try {
                s.awaitPing();
                if (err != null) {
                    err.printf("derby network server: pid %d on %s:%d (log %s)%n",
                            proc.pid(), HOST, port, log);
                }
                return s;
            } catch (IOException e) {
                s.close();
                last = e;
            }
        }
        throw last;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            return s.getLocalPort();
        }
    }

    private void awaitPing() throws IOException {
        NetworkServerControl control = control();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
        Exception lastPing = null;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("the Derby network server exited with status "
                        + process.exitValue() + ": " + logTail());
            }
            try {
                control.ping();
                return;
            } catch (Exception e) {
                lastPing = e;
            }
            sleepMs(100);
        }
        throw new IOException("the Derby network server did not answer a ping within "
                + START_TIMEOUT_MS / 1000 + " s (" + lastPing + "): " + logTail());
    }

    private NetworkServerControl control() throws IOException {
        try {
            return new NetworkServerControl(InetAddress.getByName(HOST), port);
        } catch (Exception e) {
            throw new IOException("cannot make a NetworkServerControl for port " + port, e);
        }
    }

    /** @return the port it listens on (on 127.0.0.1) */
    int port() {
        return port;
    }

    /** @return the server JVM's process id */
    long pid() {
        return process.pid();
    }

    /**
     * @param db a database name
     * @return its JDBC URL on this server
     */
    String url(String db) {
        return "jdbc:derby://" + HOST + ":" + port + "/" + db;
    }

    /** @return the last lines of the server's log, for error messages */
    String logTail() {
        try {
            List<String> lines = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 8), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** Shuts the server down: the shutdown command, then a kill if it has not gone. */
    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                control().shutdown();
            } catch (Exception e) {
                // Not answering: killed below.
            }
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroy();
                    if (!process.waitFor(5, TimeUnit.SECONDS)) {
                        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                    }
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        try {
            Runtime.getRuntime().removeShutdownHook(killer);
        } catch (IllegalStateException e) {
            // Already shutting down: the hook runs and finds the process gone.
        }
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

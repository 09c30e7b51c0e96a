package org.shoal.derby;

import java.io.IOException;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Derby as one run uses it: its system properties (durability, page cache, lock timeouts),
 * the database {@code DIR/db}, embedded in this JVM or behind a private network server, and
 * the connections the workers and the checks use.
 *
 * <p>Settings (README.md explains each):
 * <ul>
 *   <li>{@code derby.storage.pageCacheSize} = pool bytes / 4096 (at least 40), with
 *       {@code derby.storage.pageSize} = 4096 so the cache holds exactly that many bytes of
 *       pages;</li>
 *   <li>{@code full} durability: Derby's default (a commit forces the log);
 *       {@code lazy}: {@code derby.system.durability=test}, Derby's only relaxed setting;</li>
 *   <li>{@code derby.locks.deadlockTimeout=1}: a waiter looks for a deadlock after 1 s
 *       instead of 20 s; {@code derby.locks.waitTimeout=30}: a lock wait gives up after
 *       30 s (counted as {@code lock_timeout}).</li>
 * </ul>
 */
final class Engine implements AutoCloseable {
    /** Derby's page size used here, in bytes. */
    static final int PAGE_BYTES = 4096;
    /** Derby's smallest page cache, in pages. */
    static final long MIN_CACHE_PAGES = 40;
    /** The database's name under the database directory. */
    static final String DB = "db";

    private final Options opts;
    private final Map<String, String> props;
    private final NetworkServer server;
    private final String url;
    private boolean created;

    private Engine(Options opts, Map<String, String> props, NetworkServer server, String url) {
        this.opts = opts;
        this.props = props;
        this.server = server;
        this.url = url;
    }

    /**
     * The Derby properties of a run with {@code opts}.
     *
     * @param opts the run's options
     * @return property name to value, in a stable order
     */
    static Map<String, String> properties(Options opts) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("derby.storage.pageSize", Integer.toString(PAGE_BYTES));
        p.put("derby.storage.pageCacheSize", Long.toString(cachePages(opts.poolBytes)));
        if (opts.durability.equals("lazy")) {
            p.put("derby.system.durability", "test");
        }
        p.put("derby.locks.deadlockTimeout", "1");
        p.put("derby.locks.waitTimeout", "30");
        return p;
    }

    /**
     * @param poolBytes the pool size asked for
     * @return Derby's page cache size in pages
     */
    static long cachePages(long poolBytes) {
        return Math.max(MIN_CACHE_PAGES, poolBytes / PAGE_BYTES);
    }

    /**
     * Boots Derby (embedded: sets the system properties of this JVM; network: starts the
     * server).
     *
     * @param opts the run's options
     * @param err where to report; {@code null} for nothing
     * @return the engine
     * @throws IOException if the network server does not start
     */
    static Engine start(Options opts, PrintStream err) throws IOException {
        Map<String, String> props = properties(opts);
        if (opts.mode == Options.Mode.EMBEDDED) {
            System.setProperty("derby.system.home", opts.dbDir.toString());
            props.forEach(System::setProperty);
            return new Engine(opts, props, null,
                    "jdbc:derby:" + opts.dbDir.resolve(DB));
        }
        NetworkServer server = NetworkServer.start(opts.dbDir, props, err);
        return new Engine(opts, props, server, server.url(DB));
    }

    /**
     * Opens a connection: autocommit off, READ COMMITTED. The first one creates the database.
     *
     * @return the connection
     * @throws SQLException on an engine error
     */
    synchronized Connection connect() throws SQLException {
        Connection c = DriverManager.getConnection(created ? url : url + ";create=true");
        created = true;
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        return c;
    }

    /** @return the Derby properties set for this run */
    Map<String, String> derbyProperties() {
        return Collections.unmodifiableMap(props);
    }

    /** @return the server JVM's process id in network mode */
    OptionalLong serverPid() {
        return server == null ? OptionalLong.empty() : OptionalLong.of(server.pid());
    }

    /** @return the options of the run */
    Options options() {
        return opts;
    }

    /** Stops the network server, if there is one. */
    @Override
    public void close() {
        if (server != null) {
            server.close();
        }
    }

    /** @return the server log's last lines, for an error message ("" when embedded) */
    String serverLogTail() {
        return server == null ? "" : server.logTail();
    }
}

package org.shoal.derby;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.shoal.derby.tpcc.Tpcc;
import org.shoal.derby.tpcc.TpccScale;

/**
 * The entry point: parses the command line ({@link Options}), boots Derby ({@link Engine}),
 * runs the workload's points ({@link Runner}) and exits with
 * <ul>
 *   <li>0: every point ran and passed its consistency check;</li>
 *   <li>1: an engine error (message on standard error);</li>
 *   <li>2: a bad or missing argument (message naming the flag on standard error);</li>
 *   <li>3: every point ran and printed its line, but a consistency check failed.</li>
 * </ul>
 * Standard output carries only the JSON lines: anything else that writes to
 * {@code System.out} is sent to standard error.
 */
public final class Main {
    /** Exit status of a run whose points all passed. */
    public static final int OK = 0;
    /** Exit status after an engine error. */
    public static final int ENGINE_ERROR = 1;
    /** Exit status after a bad or missing argument. */
    public static final int USAGE_ERROR = 2;
    /** Exit status when a point's consistency check failed. */
    public static final int CONSISTENCY_FAILURE = 3;

    private Main() {}

    /**
     * Runs the harness and exits with its status.
     *
     * @param args the command line (README.md)
     */
    public static void main(String[] args) {
        PrintStream json = new PrintStream(new FileOutputStream(FileDescriptor.out), true,
                StandardCharsets.UTF_8);
        System.setOut(System.err);
        int status = run(args, json, System.err);
        json.flush();
        System.err.flush();
        System.exit(status);
    }

    /**
     * Runs the harness.
     *
     * @param args the command line
     * @param out where the JSON lines go
     * @param err where messages and progress go
     * @return the exit status
     */
    static int run(String[] args, PrintStream out, PrintStream err) {
        Options opts;
        try {
            opts = Options.parse(args);
        } catch (UsageError e) {
            err.println("shoal-derby-peer: " + e.getMessage());
            err.println(Options.USAGE);
            return USAGE_ERROR;
        }
        if (opts == null) {
            err.println(Options.USAGE);
            return OK;
        }
        PrintStream progress = opts.quiet ? null : err;
        Engine engine = null;
        try {
            engine = Engine.start(opts, progress);
            boolean pass = new Runner(opts, engine, workload(opts), out, progress).run();
            return pass ? OK : CONSISTENCY_FAILURE;
        } catch (Exception e) {
            err.println("shoal-derby-peer: " + opts.workload + " on " + opts.engineName()
                    + " failed: " + describe(e));
            if (engine != null && !engine.serverLogTail().isEmpty()) {
                err.println("derby network server log: " + engine.serverLogTail());
            }
            return ENGINE_ERROR;
        } finally {
            if (engine != null) {
                engine.close();
            }
        }
    }

    /**
     * @param o the options
     * @return the workload they name
     */
    static Workload workload(Options o) {
        return switch (o.workload) {
            case "select1" -> new Select1(o.scale, o.rowsPerScale);
            case "tpcb" -> new Tpcb(o.scale, o.rowsPerScale);
            case "insert" -> new Insert();
            case "tpcc" -> new Tpcc(o.variant, o.warehouses,
                    o.tpccScale.equals("tiny") ? TpccScale.tiny() : TpccScale.full(), o.seed);
            default -> throw new IllegalArgumentException("no workload " + o.workload);
        };
    }

    /** An exception with its SQLStates and causes, on one line. */
    private static String describe(Throwable e) {
        StringBuilder s = new StringBuilder();
        int depth = 0;
        for (Throwable t = e; t != null && depth < 8; depth++) {
            if (depth > 0) {
                s.append(" <- ");
            }
            s.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
            if (t instanceof java.sql.SQLException q && q.getSQLState() != null) {
                s.append(" [SQLState ").append(q.getSQLState()).append(']');
            }
            Throwable next = t instanceof java.sql.SQLException q && q.getNextException() != null
                    ? q.getNextException() : t.getCause();
            t = next == t ? null : next;
        }
        return s.toString();
    }
}

package org.shoal.derby;

import java.sql.SQLException;

/**
 * Which engine errors are aborts a retry can cure (module rule: such a transaction is rolled
 * back, counted by cause, and the worker draws a new one).
 */
final class SqlStates {
    private SqlStates() {}

    /**
     * @param e an engine error
     * @return the abort cause ({@code deadlock} for SQLState 40001, {@code lock_timeout} for
     *     40XL1 and 40XL2), or {@code null} when the error is not retryable
     */
    static String abortCause(SQLException e) {
        Throwable t = e;
        for (int depth = 0; t != null && depth < 16; depth++, t = next(t)) {
            if (t instanceof SQLException s && s.getSQLState() != null) {
                switch (s.getSQLState()) {
                    case "40001":
                        return "deadlock";
                    case "40XL1":
                    case "40XL2":
                        return "lock_timeout";
                    default:
                        break;
                }
            }
        }
        return null;
    }

    private static Throwable next(Throwable t) {
        if (t instanceof SQLException s && s.getNextException() != null) {
            return s.getNextException();
        }
        return t.getCause();
    }
}

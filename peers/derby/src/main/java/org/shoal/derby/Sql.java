package org.shoal.derby;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** Small JDBC helpers shared by the workloads. */
public final class Sql {
    private Sql() {}

    /**
     * Runs DDL or another statement without parameters.
     *
     * @param c the connection
     * @param sql the statement
     * @throws SQLException on an engine error
     */
    public static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /**
     * Reads one long from a query of one row and one column (0 for SQL NULL).
     *
     * @param c the connection
     * @param sql the query
     * @return the value
     * @throws SQLException on an engine error or when the query returns no row
     */
    public static long queryLong(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            if (!r.next()) {
                throw new SQLException("no row from " + sql);
            }
            return r.getLong(1);
        }
    }

    /**
     * Runs a prepared query expected to return one row, positioned on it.
     *
     * @param ps the statement, parameters set
     * @param what what is read, for the error message
     * @return the result set on its row (the caller closes it)
     * @throws SQLException on an engine error or when there is no row
     */
    public static ResultSet one(PreparedStatement ps, String what) throws SQLException {
        ResultSet r = ps.executeQuery();
        if (!r.next()) {
            r.close();
            throw new SQLException(what + " does not exist");
        }
        return r;
    }

    /**
     * Rolls back, ignoring errors (the connection is being cleaned up after an abort).
     *
     * @param c the connection
     */
    public static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            // The transaction is gone either way; the next statement reports a dead connection.
        }
    }
}

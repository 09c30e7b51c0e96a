package org.shoal.derby;

/**
 * A transaction that gave up for a reason retrying can cure; it is rolled back, counted in
 * the point's {@code aborts} under {@link #cause()}, and the worker draws a new transaction.
 */
public final class Abort extends Exception {
    /** Serialization version (exceptions are serializable). */
    private static final long serialVersionUID = 1L;

    /** The cause's name in the point's {@code aborts}. */
    private final String cause;

    /** @param cause the cause's name in {@code aborts}, e.g. {@code delivery-race} */
    public Abort(String cause) {
        super(cause, null, false, false);
        this.cause = cause;
    }

    /** @return the cause's name */
    public String cause() {
        return cause;
    }
}

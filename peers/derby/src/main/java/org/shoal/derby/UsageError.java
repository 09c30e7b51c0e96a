package org.shoal.derby;

/**
 * A bad or missing command-line argument. The message names the flag; {@link Main} prints it
 * on standard error and exits with status 2.
 */
public final class UsageError extends Exception {
    /** Serialization version (exceptions are serializable). */
    private static final long serialVersionUID = 1L;

    /**
     * A usage error about one flag.
     *
     * @param flag the flag, e.g. {@code --threads}
     * @param why what is wrong with it
     */
    public UsageError(String flag, String why) {
        super(flag + ": " + why);
    }
}

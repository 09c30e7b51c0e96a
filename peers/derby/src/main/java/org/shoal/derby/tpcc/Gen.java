package org.shoal.derby.tpcc;

import java.util.SplittableRandom;

/**
 * TPC-C's random generators (revision 5.11), ported from the Rust workload's {@code gen.rs}:
 * NURand with its run-time constants (clause 2.1.6), the C_LAST syllables (clause 4.3.2.3),
 * a-strings, n-strings and zip codes (clauses 4.3.2.2 and 4.3.2.7), and I_DATA/S_DATA with
 * "ORIGINAL" in 10% of the rows (clause 4.3.3.1). Every function takes the caller's
 * generator, so a run is reproducible from its seed.
 */
public final class Gen {
    /** The syllables of clause 4.3.2.3, indexed by a digit. */
    static final String[] SYLLABLES = {
        "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
    };
    /** {@code A} of NURand for C_LAST (range 0..=999). */
    static final int A_C_LAST = 255;
    /** {@code A} of NURand for C_ID (range 1..=3000). */
    static final int A_C_ID = 1023;
    /** {@code A} of NURand for OL_I_ID (range 1..=100,000). */
    static final int A_OL_I_ID = 8191;

    private static final String ALNUM =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    private Gen() {}

    /**
     * The run-time constants {@code C} of NURand (clause 2.1.6.1), one per {@code A}; C_LAST
     * has a load and a run value whose difference lies in 65..=119 and is neither 96 nor 112.
     *
     * @param cLastLoad C for C_LAST while loading
     * @param cLastRun C for C_LAST during the run
     * @param cId C for C_ID
     * @param olIId C for OL_I_ID
     */
    public record NuRand(int cLastLoad, int cLastRun, int cId, int olIId) {
        /**
         * Draws the constants, {@code cLastRun} until the delta rule holds.
         *
         * @param r the generator
         * @return the constants
         */
        public static NuRand random(SplittableRandom r) {
            int load = uniform(r, 0, A_C_LAST);
            int run;
            do {
                run = uniform(r, 0, A_C_LAST);
            } while (!cLastDeltaOk(load, run));
            return new NuRand(load, run, uniform(r, 0, A_C_ID), uniform(r, 0, A_OL_I_ID));
        }
    }

    /**
     * @param load C_LAST's load constant
     * @param run C_LAST's run constant
     * @return whether they obey clause 2.1.6.1's delta rule
     */
    static boolean cLastDeltaOk(int load, int run) {
        int d = Math.abs(load - run);
        return d >= 65 && d <= 119 && d != 96 && d != 112;
    }

    /**
     * @param r the generator
     * @param lo smallest value
     * @param hi largest value (inclusive)
     * @return a uniform draw from lo..=hi
     */
    static int uniform(SplittableRandom r, int lo, int hi) {
        return r.nextInt(lo, hi + 1);
    }

    /**
     * {@code NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x}.
     *
     * @param r the generator
     * @param a A
     * @param c C
     * @param x smallest value
     * @param y largest value
     * @return the draw
     */
    static int nurand(SplittableRandom r, int a, int c, int x, int y) {
        int v = uniform(r, 0, a) | uniform(r, x, y);
        return (v + c) % (y - x + 1) + x;
    }

    /**
     * @param n 0..=999
     * @return the last name of number n: the syllables of its three digits, hundreds first
     */
    static String lastName(int n) {
        return SYLLABLES[n / 100] + SYLLABLES[(n / 10) % 10] + SYLLABLES[n % 10];
    }

    /**
     * C_LAST of customer {@code cId} at load: the first 1,000 of a district get the names of
     * 0..=999 in order, the rest {@code NURand(255, 0, 999)} with the load constant.
     *
     * @param r the generator
     * @param k the constants
     * @param cId the customer
     * @return the name
     */
    static String loadLastName(SplittableRandom r, NuRand k, int cId) {
        if (cId >= 1 && cId <= 1000) {
            return lastName(cId - 1);
        }
        return lastName(nurand(r, A_C_LAST, k.cLastLoad(), 0, 999));
    }

    /**
     * @param r the generator
     * @param min shortest length
     * @param max longest length
     * @return a random a-string (letters and digits)
     */
    static String aString(SplittableRandom r, int min, int max) {
        int n = uniform(r, min, max);
        StringBuilder s = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            s.append(ALNUM.charAt(r.nextInt(ALNUM.length())));
        }
        return s.toString();
    }

    /**
     * @param r the generator
     * @param min shortest length
     * @param max longest length
     * @return a random n-string (digits)
     */
    static String nString(SplittableRandom r, int min, int max) {
        int n = uniform(r, min, max);
        StringBuilder s = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            s.append((char) ('0' + r.nextInt(10)));
        }
        return s.toString();
    }

    /**
     * @param r the generator
     * @return a zip code: 4 random digits and "11111"
     */
    static String zip(SplittableRandom r) {
        return nString(r, 4, 4) + "11111";
    }

    /**
     * @param r the generator
     * @return I_DATA or S_DATA: an a-string of 26..=50 characters, with "ORIGINAL" at a
     *     random position in 10% of the rows
     */
    static String dataField(SplittableRandom r) {
        String s = aString(r, 26, 50);
        if (r.nextInt(10) == 0) {
            int at = uniform(r, 0, s.length() - 8);
            s = s.substring(0, at) + "ORIGINAL" + s.substring(at + 8);
        }
        return s;
    }
}

package org.shoal.derby.tpcc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The generators and input rules ported from the Rust workload. */
class GenTest {
    @Test
    void lastNamesAndNuRand() {
        assertEquals("BARBARBAR", Gen.lastName(0));
        assertEquals("PRICALLYOUGHT", Gen.lastName(371));
        assertEquals("EINGEINGEING", Gen.lastName(999));
        SplittableRandom r = new SplittableRandom(1);
        for (int seed = 0; seed < 200; seed++) {
            Gen.NuRand k = Gen.NuRand.random(new SplittableRandom(seed));
            assertTrue(Gen.cLastDeltaOk(k.cLastLoad(), k.cLastRun()), k.toString());
        }
        assertFalse(Gen.cLastDeltaOk(0, 96));
        assertFalse(Gen.cLastDeltaOk(0, 64));
        assertTrue(Gen.cLastDeltaOk(0, 65));
        Gen.NuRand k = Gen.NuRand.random(r);
        int[] counts = new int[1000];
        for (int i = 0; i < 200_000; i++) {
            int v = Gen.nurand(r, Gen.A_C_LAST, k.cLastRun(), 0, 999);
            assertTrue(v >= 0 && v <= 999);
            counts[v]++;
            int item = Gen.nurand(r, Gen.A_OL_I_ID, k.olIId(), 1, 100_000);
            assertTrue(item >= 1 && item <= 100_000);
        }
        int lo = Integer.MAX_VALUE;
        int hi = 0;
        for (int c : counts) {
            lo = Math.min(lo, c);
            hi = Math.max(hi, c);
        }
        assertTrue(hi > 4 * Math.max(1, lo), "NURand is skewed: min " + lo + ", max " + hi);
    }

    @Test
    void inputsFollowTheClauses() {
        SplittableRandom r = new SplittableRandom(2);
        Input.Env env = new Input.Env(3, TpccScale.full(), Gen.NuRand.random(r));
        int rollbacks = 0;
        int byName = 0;
        int remote = 0;
        for (int i = 0; i < 20_000; i++) {
            Input.NewOrderIn o = Input.NewOrderIn.draw(env, r);
            assertTrue(o.lines().size() >= 5 && o.lines().size() <= 15);
            rollbacks += o.lines().stream().anyMatch(l -> l.iId() == 100_001) ? 1 : 0;
            Input.PaymentIn p = Input.PaymentIn.draw(env, r);
            byName += p.customer().last() != null ? 1 : 0;
            remote += p.cW() != p.w() ? 1 : 0;
        }
        assertTrue(rollbacks >= 120 && rollbacks <= 280, "rollbacks " + rollbacks);
        assertTrue(byName >= 11_400 && byName <= 12_600, "by name " + byName);
        assertTrue(remote >= 2_600 && remote <= 3_400, "remote " + remote);
        int[] kinds = new int[5];
        for (int i = 0; i < 100_000; i++) {
            kinds[Input.Mix.STANDARD.draw(r).ordinal()]++;
        }
        assertTrue(kinds[0] > 44_000 && kinds[0] < 46_000 && kinds[1] > 42_000
                && kinds[1] < 44_000, java.util.Arrays.toString(kinds));
        for (int i = 2; i < 5; i++) {
            assertTrue(kinds[i] > 3_500 && kinds[i] < 4_500, java.util.Arrays.toString(kinds));
        }
    }

    @Test
    void badCreditDataIsPrefixedAndCut() {
        Input.PaymentIn p = new Input.PaymentIn(1, 2, 1, 2, new Input.Customer(7, null), 12_345);
        String s = Input.bcData(7, p, "x".repeat(500));
        assertTrue(s.startsWith("7 2 1 2 1 123.45 x"), s);
        assertEquals(500, s.length());
        String d = Gen.dataField(new SplittableRandom(5));
        assertTrue(d.length() >= 26 && d.length() <= 50);
    }
}

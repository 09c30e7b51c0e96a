package org.shoal.derby;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.shoal.derby.tpcc.Tpcc;
import org.shoal.derby.tpcc.TpccScale;

/** A corrupted value makes the workload's consistency check fail (embedded, in this JVM). */
class CorruptionTest {
    private static Engine embedded(Path dir) throws Exception {
        Options o = Options.parse(new String[] {"--mode", "embedded", "--workload", "tpcb",
            "--db-dir", dir.toString(), "--durability", "lazy", "--pool-bytes", "4194304"});
        return Engine.start(o, null);
    }

    @Test
    void aCorruptedBranchBalanceIsReported(@TempDir Path dir) throws Exception {
        try (Engine e = embedded(dir); Connection c = e.connect()) {
            Tpcb w = new Tpcb(1, 500);
            w.setup(c, 1, new Progress("test", 0, null));
            assertEquals(List.of(), w.check(c));
            Sql.exec(c, "UPDATE pgbench_branches SET bbalance = bbalance + 5 WHERE bid = 1");
            c.commit();
            List<String> f = w.check(c);
            assertEquals(1, f.size(), f.toString());
            assertTrue(f.get(0).contains("sum(bbalance) 5"), f.get(0));
            c.rollback();
        }
    }

    @Test
    void aCorruptedDistrictYtdIsReported(@TempDir Path dir) throws Exception {
        try (Engine e = embedded(dir); Connection c = e.connect()) {
            Tpcc w = new Tpcc("standard", 1, TpccScale.tiny(), 3);
            w.setup(c, 1, new Progress("test", 0, null));
            assertEquals(List.of(), w.check(c));
            Sql.exec(c, "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 4");
            c.commit();
            String f = String.join("; ", w.check(c));
            assertTrue(f.contains("condition 1: warehouse 1"), f);
            assertTrue(f.contains("condition 9: district (1,4)"), f);
            Sql.exec(c, "DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 5"
                    + " AND ol_number = 1");
            c.commit();
            f = String.join("; ", w.check(c));
            assertTrue(f.contains("condition 4: district (1,2)"), f);
            assertTrue(f.contains("condition 6: order (1,2,5)"), f);
            c.rollback();
        }
    }
}

/*
 * Plain-function shim over Berkeley DB's C API for shoal-bench's `bdb` peer (ffi.rs).
 *
 * Berkeley DB calls its methods through function pointers inside DB_ENV, DB, DB_TXN and
 * DBC; Rust cannot call those without mirroring the structs' layouts, so this file turns
 * each call the peer needs into a plain function. Every function returns Berkeley DB's
 * own return code (0 on success); shoal_bdb_classify sorts codes into the cases the Rust
 * side acts on, and shoal_bdb_strerror gives the message of any code.
 */
#include <db.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What shoal_bdb_classify returns (mirrored by ffi.rs). */
enum {
    SHOAL_OK = 0,
    SHOAL_NOTFOUND = 1,
    SHOAL_KEYEXIST = 2,
    SHOAL_DEADLOCK = 3,
    SHOAL_NOTGRANTED = 4,
    SHOAL_BUFFER_SMALL = 5,
    SHOAL_OTHER = 6
};

int shoal_bdb_classify(int ret) {
    switch (ret) {
    case 0: return SHOAL_OK;
    case DB_NOTFOUND: return SHOAL_NOTFOUND;
    case DB_KEYEMPTY: return SHOAL_NOTFOUND;
    case DB_KEYEXIST: return SHOAL_KEYEXIST;
    case DB_LOCK_DEADLOCK: return SHOAL_DEADLOCK;
    case DB_LOCK_NOTGRANTED: return SHOAL_NOTGRANTED;
    case DB_BUFFER_SMALL: return SHOAL_BUFFER_SMALL;
    default: return SHOAL_OTHER;
    }
}

const char *shoal_bdb_strerror(int ret) { return db_strerror(ret); }

/*
 * Creates and opens a transactional environment in `home` (which must exist):
 * DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_THREAD |
 * DB_RECOVER | DB_PRIVATE, a cache of `cache_bytes` in one region, deadlock detection on
 * every conflict (DB_LOCK_DEFAULT), the given lock-table, transaction and log sizes, and
 * DB_TXN_WRITE_NOSYNC when `write_nosync` is not 0 (commit writes the log without syncing).
 */
int shoal_bdb_env_open(DB_ENV **out, const char *home, unsigned long long cache_bytes,
                       unsigned int max_locks, unsigned int max_lockers,
                       unsigned int max_objects, unsigned int max_txns,
                       unsigned int log_buffer, unsigned int log_file, int write_nosync) {
    DB_ENV *env = NULL;
    int ret;
    *out = NULL;
    if ((ret = db_env_create(&env, 0)) != 0)
        return ret;
    if ((ret = env->set_cachesize(env, (u_int32_t)(cache_bytes >> 30),
                                  (u_int32_t)(cache_bytes & ((1ULL << 30) - 1)), 1)) != 0)
        goto fail;
    if ((ret = env->set_lk_detect(env, DB_LOCK_DEFAULT)) != 0)
        goto fail;
    if ((ret = env->set_lk_max_locks(env, max_locks)) != 0)
        goto fail;
    if ((ret = env->set_lk_max_lockers(env, max_lockers)) != 0)
        goto fail;
    if ((ret = env->set_lk_max_objects(env, max_objects)) != 0)
        goto fail;
    if ((ret = env->set_tx_max(env, max_txns)) != 0)
        goto fail;
    if ((ret = env->set_lg_bsize(env, log_buffer)) != 0)
        goto fail;
    if ((ret = env->set_lg_max(env, log_file)) != 0)
        goto fail;
    if (write_nosync && (ret = env->set_flags(env, DB_TXN_WRITE_NOSYNC, 1)) != 0)
        goto fail;
    ret = env->open(env, home,
                    DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
                        DB_THREAD | DB_RECOVER | DB_PRIVATE,
                    0);
    if (ret != 0)
        goto fail;
    *out = env;
    return 0;
fail:
    env->close(env, 0);
    return ret;
}

int shoal_bdb_env_close(DB_ENV *env) { return env->close(env, 0); }

/* Creates (or opens) the B-tree database in file `file` of the environment, with pages of
 * `page_size` bytes, as DB_AUTO_COMMIT | DB_CREATE | DB_THREAD. */
int shoal_bdb_db_open(DB_ENV *env, const char *file, unsigned int page_size, DB **out) {
    DB *db = NULL;
    int ret;
    *out = NULL;
    if ((ret = db_create(&db, env, 0)) != 0)
        return ret;
    if ((ret = db->set_pagesize(db, page_size)) != 0)
        goto fail;
    ret = db->open(db, NULL, file, NULL, DB_BTREE, DB_AUTO_COMMIT | DB_CREATE | DB_THREAD,
                   0644);
    if (ret != 0)
        goto fail;
    *out = db;
    return 0;
fail:
    db->close(db, 0);
    return ret;
}

int shoal_bdb_db_close(DB *db) { return db->close(db, 0); }

/* Begins a transaction at degree 2 (DB_READ_COMMITTED) when `read_committed` is not 0,
 * else at Berkeley DB's default degree 3. */
int shoal_bdb_txn_begin(DB_ENV *env, int read_committed, DB_TXN **out) {
    *out = NULL;
    return env->txn_begin(env, NULL, out, read_committed ? DB_READ_COMMITTED : 0);
}

int shoal_bdb_txn_commit(DB_TXN *txn) { return txn->commit(txn, 0); }

int shoal_bdb_txn_abort(DB_TXN *txn) { return txn->abort(txn); }

/* Reads the record with key `k` into `buf` (capacity `cap`); `*len` is the record's size,
 * also on DB_BUFFER_SMALL (then nothing was copied). `rmw`: take a write lock (DB_RMW). */
int shoal_bdb_get(DB *db, DB_TXN *txn, const void *k, unsigned int klen, void *buf,
                  unsigned int cap, unsigned int *len, int rmw) {
    DBT key, data;
    int ret;
    memset(&key, 0, sizeof key);
    memset(&data, 0, sizeof data);
    key.data = (void *)k;
    key.size = klen;
    data.data = buf;
    data.ulen = cap;
    data.flags = DB_DBT_USERMEM;
    ret = db->get(db, txn, &key, &data, rmw ? DB_RMW : 0);
    if (ret == 0 || ret == DB_BUFFER_SMALL)
        *len = data.size;
    return ret;
}

/* Stores `v` under `k`; with `no_overwrite`, fails with DB_KEYEXIST if the key exists. */
int shoal_bdb_put(DB *db, DB_TXN *txn, const void *k, unsigned int klen, const void *v,
                  unsigned int vlen, int no_overwrite) {
    DBT key, data;
    memset(&key, 0, sizeof key);
    memset(&data, 0, sizeof data);
    key.data = (void *)k;
    key.size = klen;
    data.data = (void *)v;
    data.size = vlen;
    return db->put(db, txn, &key, &data, no_overwrite ? DB_NOOVERWRITE : 0);
}

/* A cursor with the key and data buffers Berkeley DB reallocates as records need
 * (DB_DBT_REALLOC); they stay valid until the cursor's next operation. */
struct shoal_bdb_cursor {
    DBC *dbc;
    DBT key;
    DBT data;
};

int shoal_bdb_cursor_open(DB *db, DB_TXN *txn, struct shoal_bdb_cursor **out) {
    struct shoal_bdb_cursor *c;
    int ret;
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ENOMEM;
    if ((ret = db->cursor(db, txn, &c->dbc, 0)) != 0) {
        free(c);
        return ret;
    }
    c->key.flags = DB_DBT_REALLOC;
    c->data.flags = DB_DBT_REALLOC;
    *out = c;
    return 0;
}

/* Moves the cursor: `op` 0 first, 1 last, 2 next, 3 prev, 5 set range (smallest key
 * >= `k`). On success the record's key and data are at `*ko`/`*kl`
 * and `*vo`/`*vl`. `rmw`: take a write lock (DB_RMW). */
int shoal_bdb_cursor_get(struct shoal_bdb_cursor *c, int op, const void *k, unsigned int klen,
                         int rmw, const void **ko, unsigned int *kl, const void **vo,
                         unsigned int *vl) {
    u_int32_t flag;
    int ret;
    switch (op) {
    case 0: flag = DB_FIRST; break;
    case 1: flag = DB_LAST; break;
    case 2: flag = DB_NEXT; break;
    case 3: flag = DB_PREV; break;
    case 5: flag = DB_SET_RANGE; break;
    default: return EINVAL;
    }
    if (op == 5) {
        void *p = realloc(c->key.data, klen > 0 ? klen : 1);
        if (p == NULL)
            return ENOMEM;
        if (klen > 0)
            memcpy(p, k, klen);
        c->key.data = p;
        c->key.size = klen;
    }
    ret = c->dbc->get(c->dbc, &c->key, &c->data, flag | (rmw ? DB_RMW : 0));
    if (ret == 0) {
        *ko = c->key.data;
        *kl = c->key.size;
        *vo = c->data.data;
        *vl = c->data.size;
    }
    return ret;
}

/* Deletes the record under the cursor. */
int shoal_bdb_cursor_del(struct shoal_bdb_cursor *c) { return c->dbc->del(c->dbc, 0); }

/* Closes the cursor and frees it with its buffers. */
int shoal_bdb_cursor_close(struct shoal_bdb_cursor *c) {
    int ret = c->dbc->close(c->dbc);
    free(c->key.data);
    free(c->data.data);
    free(c);
    return ret;
}

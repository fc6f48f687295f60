-- +goose Up
-- Declarative partitioning of memories by hash(mysis_id), 16 partitions (memories_p00 … memories_p15). Every query
-- of the service names one mysis, so each is pruned to one partition: its b-tree and GIN indexes are 1/16 of the
-- table's, vacuum and index builds work partition by partition, and the layout is the one Citus distributes by the
-- same column (docs/OPERATIONS.md).
--
-- The conversion is generic, so it carries along whatever the earlier migrations (including ones written on other
-- branches, e.g. 00007's search indexes) put on memories:
--   * columns, defaults, identity, generated columns, NOT NULL and CHECK constraints, storage and comments come
--     from CREATE TABLE … (LIKE old INCLUDING ALL EXCLUDING INDEXES);
--   * every index that does not back a constraint is re-created from its own pg_get_indexdef text, captured before
--     the old table is renamed (so it keeps its name, method, columns, INCLUDE list and predicate); unique ones must
--     contain mysis_id, which every one written so far does — one that does not makes this migration fail, loudly,
--     and changes nothing (it runs in one transaction);
--   * UNIQUE and foreign-key constraints are re-added from pg_get_constraintdef under their own names;
--   * the primary key becomes (id, mysis_id): a partitioned table's keys must contain the partition column, and id
--     first keeps its inserts on the right-hand edge of the b-tree.
-- Each partition's copy of an index is renamed <index>_pNN (zoea_name_partition_indexes), so error handling can
-- recognise a constraint by its parent's name.
--
-- It rewrites the whole table under an ACCESS EXCLUSIVE lock (copy, then index builds): plan a maintenance window
-- (docs/BENCHMARKS.md has the measured time). Already partitioned: nothing to do.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION zoea_name_partition_indexes(parent regclass) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT ci.relname AS child, pi.relname AS parent_index, right(ct.relname, 2) AS part
        FROM pg_index px
        JOIN pg_class pi ON pi.oid = px.indexrelid
        JOIN pg_inherits h ON h.inhparent = px.indexrelid
        JOIN pg_class ci ON ci.oid = h.inhrelid
        JOIN pg_index cx ON cx.indexrelid = ci.oid
        JOIN pg_class ct ON ct.oid = cx.indrelid
        WHERE px.indrelid = parent
    LOOP
        IF r.child <> left(r.parent_index, 59) || '_p' || r.part THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', r.child, left(r.parent_index, 59) || '_p' || r.part);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    parts      constant int := 16;
    idx_defs   text[];
    con_names  text[];
    con_defs   text[];
    cols       text;
    next_id    bigint;
    r          record;
    i          int;
BEGIN
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = 'memories'::regclass) = 'p' THEN
        RETURN;
    END IF;
    LOCK TABLE memories IN ACCESS EXCLUSIVE MODE;

    -- What to re-create, captured while the definitions still name the table memories.
    SELECT coalesce(array_agg(pg_get_indexdef(x.indexrelid) ORDER BY x.indexrelid), '{}') INTO idx_defs
    FROM pg_index x
    WHERE x.indrelid = 'memories'::regclass
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid);
    SELECT coalesce(array_agg(c.conname::text ORDER BY c.oid), '{}'), coalesce(array_agg(pg_get_constraintdef(c.oid) ORDER BY c.oid), '{}')
        INTO con_names, con_defs
    FROM pg_constraint c
    WHERE c.conrelid = 'memories'::regclass AND c.contype IN ('u', 'f');
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a
    WHERE a.attrelid = 'memories'::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
    next_id := nextval(pg_get_serial_sequence('memories', 'id'));

    -- The old table and its index names step aside.
    ALTER TABLE memories RENAME TO memories_unpartitioned;
    FOR r IN SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             WHERE x.indrelid = 'memories_unpartitioned'::regclass LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, left(r.relname, 55) || '_unpart');
    END LOOP;

    CREATE TABLE memories (LIKE memories_unpartitioned INCLUDING ALL EXCLUDING INDEXES) PARTITION BY HASH (mysis_id);
    FOR i IN 0 .. parts - 1 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF memories FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                       'memories_p' || lpad(i::text, 2, '0'), parts, i);
    END LOOP;
    PERFORM setval(pg_get_serial_sequence('memories', 'id'), next_id, false);

    -- Rows first, indexes after: one sorted build per index instead of row-by-row maintenance.
    EXECUTE format('INSERT INTO memories (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM memories_unpartitioned', cols, cols);

    ALTER TABLE memories ADD CONSTRAINT memories_pkey PRIMARY KEY (id, mysis_id);
    FOR i IN 1 .. coalesce(array_length(con_names, 1), 0) LOOP
        EXECUTE format('ALTER TABLE memories ADD CONSTRAINT %I %s', con_names[i], con_defs[i]);
    END LOOP;
    FOR i IN 1 .. coalesce(array_length(idx_defs, 1), 0) LOOP
        EXECUTE idx_defs[i];
    END LOOP;
    PERFORM zoea_name_partition_indexes('memories'::regclass);

    DROP TABLE memories_unpartitioned;
    -- The identity's sequence got a fresh name while the old one existed; it takes the usual one back.
    IF pg_get_serial_sequence('memories', 'id') <> 'public.memories_id_seq' AND to_regclass('memories_id_seq') IS NULL THEN
        EXECUTE format('ALTER SEQUENCE %s RENAME TO memories_id_seq', pg_get_serial_sequence('memories', 'id'));
    END IF;
    ANALYZE memories;
END $$;
-- +goose StatementEnd

-- +goose Down
-- The reverse, as generic: one plain table with the same columns, constraints and indexes, primary key (id).
-- +goose StatementBegin
DO $$
DECLARE
    idx_defs   text[];
    con_names  text[];
    con_defs   text[];
    cols       text;
    next_id    bigint;
    r          record;
    i          int;
BEGIN
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = 'memories'::regclass) <> 'p' THEN
        RETURN;
    END IF;
    LOCK TABLE memories IN ACCESS EXCLUSIVE MODE;
    SELECT coalesce(array_agg(replace(pg_get_indexdef(x.indexrelid), ' ON ONLY ', ' ON ') ORDER BY x.indexrelid), '{}') INTO idx_defs
    FROM pg_index x
    WHERE x.indrelid = 'memories'::regclass
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid);
    SELECT coalesce(array_agg(c.conname::text ORDER BY c.oid), '{}'), coalesce(array_agg(pg_get_constraintdef(c.oid) ORDER BY c.oid), '{}')
        INTO con_names, con_defs
    FROM pg_constraint c
    WHERE c.conrelid = 'memories'::regclass AND c.contype IN ('u', 'f');
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a
    WHERE a.attrelid = 'memories'::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
    next_id := nextval(pg_get_serial_sequence('memories', 'id'));

    ALTER TABLE memories RENAME TO memories_partitioned;
    FOR r IN SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             WHERE x.indrelid = 'memories_partitioned'::regclass LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, left(r.relname, 55) || '_part');
    END LOOP;
    CREATE TABLE memories (LIKE memories_partitioned INCLUDING ALL EXCLUDING INDEXES);
    PERFORM setval(pg_get_serial_sequence('memories', 'id'), next_id, false);
    EXECUTE format('INSERT INTO memories (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM memories_partitioned', cols, cols);
    ALTER TABLE memories ADD CONSTRAINT memories_pkey PRIMARY KEY (id);
    FOR i IN 1 .. coalesce(array_length(con_names, 1), 0) LOOP
        EXECUTE format('ALTER TABLE memories ADD CONSTRAINT %I %s', con_names[i], con_defs[i]);
    END LOOP;
    FOR i IN 1 .. coalesce(array_length(idx_defs, 1), 0) LOOP
        EXECUTE idx_defs[i];
    END LOOP;
    DROP TABLE memories_partitioned;
    IF to_regclass('memories_id_seq') IS NULL THEN
        EXECUTE format('ALTER SEQUENCE %s RENAME TO memories_id_seq', pg_get_serial_sequence('memories', 'id'));
    END IF;
END $$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS zoea_name_partition_indexes(regclass);

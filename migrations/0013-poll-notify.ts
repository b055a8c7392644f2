import { sql, type Kysely } from 'kysely';

/**
 * Every replica answers polls from memory and must hear, at commit, what changed under it. These
 * statement triggers send one notification per statement on channel `florete_cache`: `h:<nodes>`
 * for node heads, `c:<ids>` for node credentials, `k` for the checkpoint. A list too long for one
 * notification (its limit is 8000 bytes) becomes `*`: forget them all. Triggers rather than code in
 * each writer, so that no write path (publish, rollback, retire, key rotation, rebuild, revoke,
 * enrolment) can change a poll's answer without saying so.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION florete_notify_keys(prefix text, keys text) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      IF keys IS NULL THEN RETURN; END IF;
      IF length(keys) > 7000 THEN keys := '*'; END IF;
      PERFORM pg_notify('florete_cache', prefix || ':' || keys);
    END $$`.execute(db);
  for (const [table, key, prefix] of [
    ['node_heads', 'node', 'h'],
    ['node_credentials', 'id', 'c'],
  ] as const) {
    // One function per transition table shape: a trigger with transition tables serves one event only.
    await sql
      .raw(
        `CREATE FUNCTION florete_notify_${table}_new() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM florete_notify_keys('${prefix}', (SELECT string_agg(DISTINCT ${key}, ',') FROM changed_new));
          RETURN NULL;
        END $$`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE FUNCTION florete_notify_${table}_old() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM florete_notify_keys('${prefix}', (SELECT string_agg(DISTINCT ${key}, ',') FROM changed_old));
          RETURN NULL;
        END $$`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER ${table}_notify_insert AFTER INSERT ON ${table} REFERENCING NEW TABLE AS changed_new FOR EACH STATEMENT EXECUTE FUNCTION florete_notify_${table}_new()`,
      )
      .execute(db);
    // An update is announced by its old keys: a key column never changes, so old and new name the same rows.
    await sql
      .raw(
        `CREATE TRIGGER ${table}_notify_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS changed_old FOR EACH STATEMENT EXECUTE FUNCTION florete_notify_${table}_old()`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER ${table}_notify_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS changed_old FOR EACH STATEMENT EXECUTE FUNCTION florete_notify_${table}_old()`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE FUNCTION florete_notify_${table}_all() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM florete_notify_keys('${prefix}', '*');
          RETURN NULL;
        END $$`,
      )
      .execute(db);
    await sql
      .raw(`CREATE TRIGGER ${table}_notify_truncate AFTER TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION florete_notify_${table}_all()`)
      .execute(db);
  }
  await sql`
    CREATE FUNCTION florete_notify_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('florete_cache', 'k');
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER ledger_checkpoint_notify AFTER INSERT OR UPDATE OR DELETE ON ledger_checkpoint FOR EACH STATEMENT EXECUTE FUNCTION florete_notify_checkpoint()`.execute(
    db,
  );
}

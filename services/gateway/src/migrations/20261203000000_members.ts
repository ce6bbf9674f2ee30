import type { Knex } from 'knex';

export const name = '20261203000000_members';

/**
 * Members of an org and their session roles (proof-and-reach.md section 6), one row per
 * (org, email): the role here is what a session gets once the person is in it, so a
 * demotion or a removal takes effect on the next request. The people already seen become
 * members with the role they last signed in with. The audit log learns who acted by name.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('access').createTable('members', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('id').inTable('access.orgs');
    t.text('email').notNullable();
    t.text('role').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.text('invited_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('removed_at', { useTz: true });
    t.unique(['org_id', 'email']);
  });
  await knex.raw(`ALTER TABLE access.members ADD CONSTRAINT members_role_check CHECK (role IN ('admin', 'editor', 'member'))`);
  await knex.raw(`ALTER TABLE access.members ADD CONSTRAINT members_status_check CHECK (status IN ('active', 'removed'))`);
  await knex.raw(`
    INSERT INTO access.members (id, org_id, email, role, created_at, updated_at)
    SELECT DISTINCT ON (org_id, lower(email))
           'mem_' || md5(org_id || ':' || lower(email)), org_id, lower(email),
           CASE WHEN role IN ('admin', 'editor', 'member') THEN role ELSE 'member' END, first_seen_at, last_seen_at
      FROM access.users
     ORDER BY org_id, lower(email), last_seen_at DESC
    ON CONFLICT DO NOTHING`);
  await knex.schema.withSchema('access').alterTable('audit_log', (t) => {
    t.text('actor_label');
  });
  await knex.schema.withSchema('access').alterTable('audit_log', (t) => {
    t.index(['org_id', 'action', 'at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('access').alterTable('audit_log', (t) => {
    t.dropIndex(['org_id', 'action', 'at']);
    t.dropColumn('actor_label');
  });
  await knex.schema.withSchema('access').dropTableIfExists('members');
}

// Where a journal lives, as `--db` names it: a SQLite file (the embedded default), ':memory:', or a
// PostgreSQL URL (postgres://user:pass@host:port/db). A URL is checked here, and shown with its
// password masked wherever it is logged or put into an error.

/** True when `db` names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The URL with its password (and any password= parameter) masked, for logs and errors. */
export function redactUrl(db: string): string {
  try {
    const u = new URL(db);
    if (u.password) u.password = '***';
    if (u.searchParams.has('password')) u.searchParams.set('password', '***');
    return u.toString();
  } catch {
    // Not parseable: show the scheme only, since the rest may hold a password.
    return db.replace(/^(postgres(ql)?:\/\/).*$/i, '$1…');
  }
}

/** A PostgreSQL URL the journal can use, or an error that says what is wrong with it (never the password). */
export function checkPostgresUrl(db: string): void {
  let u: URL;
  try {
    u = new URL(db);
  } catch {
    throw new Error(`--db ${redactUrl(db)} is not a valid URL; a PostgreSQL journal is named postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`);
  }
  if (!u.hostname && !u.searchParams.has('host'))
    throw new Error(`--db ${redactUrl(db)} names no host; a PostgreSQL journal is named postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`);
  if (u.pathname.replace(/^\//, '') === '') throw new Error(`--db ${redactUrl(db)} names no database; a PostgreSQL journal is named postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`);
}

import { numberedParameters } from '../../src/db/orm';

describe("numberedParameters: ? placeholders as PostgreSQL's $n", () => {
  it('numbers every placeholder in order', () => {
    expect(numberedParameters('update t set a = ?, b = coalesce(?, b) where id = ? and c is not distinct from ?')).toBe(
      'update t set a = $1, b = coalesce($2, b) where id = $3 and c is not distinct from $4',
    );
  });

  it('keeps a cast after a placeholder', () => {
    expect(numberedParameters('select ?, ?::jsonb, ?::timestamptz')).toBe('select $1, $2::jsonb, $3::timestamptz');
  });

  it('leaves a ? inside quoted literals, quoted identifiers and -- comments alone', () => {
    expect(numberedParameters(`select 'what?' as "who?", ? -- why?\n, ? from t where x = 'it''s ?' and y = ?`)).toBe(
      `select 'what?' as "who?", $1 -- why?\n, $2 from t where x = 'it''s ?' and y = $3`,
    );
  });

  it('leaves a statement without placeholders unchanged', () => {
    expect(numberedParameters("select count(*)::int from t where s = 'created'")).toBe(
      "select count(*)::int from t where s = 'created'",
    );
  });
});

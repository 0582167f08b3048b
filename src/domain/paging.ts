/**
 * Keyset paging shared by every list (PRODUCT.md, "Lists"; src/domain/lists.ts): positions, page
 * shapes and the SQL conditions a page is read with. No domain imports, so any record's module can
 * page its own list without a cycle through the others.
 */

/** A position in a list: the (createdAt, id) of the last item of the previous page. */
export interface ListPosition {
  createdAt: Date;
  id: string;
}

export interface PageRequest {
  limit: number;
  after?: ListPosition;
}

export interface Page<T> {
  items: T[];
  /** The last item's position when more items follow; null on the last page. */
  next: ListPosition | null;
}

/** SQL conditions with their `?` bindings, joined with `and`. */
export class Conditions {
  readonly sql: string[] = [];
  readonly bindings: unknown[] = [];

  add(sql: string, ...bindings: unknown[]): this {
    this.sql.push(sql);
    this.bindings.push(...bindings);
    return this;
  }

  /** Rows strictly after `after` in (created_at, id) descending order: a row comparison the index bounds. */
  after(alias: string, after: ListPosition | undefined): this {
    return after ? this.add(`(${alias}created_at, ${alias}id) < (?, ?)`, after.createdAt, after.id) : this;
  }

  toString(): string {
    return this.sql.join(' and ');
  }
}

export function pageOf<R, T>(
  rows: R[],
  limit: number,
  position: (row: R) => ListPosition,
  map: (rows: R[]) => T[],
): Page<T> {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  return { items: map(kept), next: rows.length > limit && last ? position(last) : null };
}

export const positionOfRow = (row: Record<string, unknown>): ListPosition => ({
  createdAt: new Date(row.created_at as Date),
  id: row.id as string,
});

/** Listeners grouped by a key (a task id): one producer serves every subscriber of each key. */
export class KeyedListeners<T> {
  private readonly byKey = new Map<string, Set<(value: T) => void>>();

  /** Adds a listener for `key`; the returned function removes it (and the key, with its last listener). */
  add(key: string, listener: (value: T) => void): () => void {
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.byKey.delete(key);
    };
  }

  /** A copy: listeners may remove themselves while being called. */
  of(key: string): ((value: T) => void)[] {
    return [...(this.byKey.get(key) ?? [])];
  }

  count(key: string): number {
    return this.byKey.get(key)?.size ?? 0;
  }

  keys(): string[] {
    return [...this.byKey.keys()];
  }

  /** How many keys have listeners. */
  get size(): number {
    return this.byKey.size;
  }
}

/**
 * A deficit round robin queue (Shreedhar and Varghese, 1995) over keys (tenants): each key with waiting items
 * gets a turn in a ring, and a turn serves as many items as the key's weight (a weight below 1 builds up over
 * rounds). Items of one key keep their order. A key that arrives joins the end of the ring, so its first item
 * waits at most for one turn of every other waiting key: the sum of their weights (rounded up) in items, however
 * long their queues are. That is the bound docs/operating.md "Fair work" states.
 */
export class FairQueue<T> {
  private readonly queues = new Map<string, { items: T[]; head: number; deficit: number }>();
  /** The keys with waiting items, in ring order; `turn` points at the key being served. */
  private readonly ring: string[] = [];
  private turn = 0;
  /** Whether the key at `turn` has been credited its weight for this visit. */
  private credited = false;
  private count = 0;

  /** `weightOf` answers a key's weight (> 0; 1 when not configured). */
  constructor(private readonly weightOf: (key: string) => number = () => 1) {}

  get size(): number {
    return this.count;
  }

  push(key: string, item: T): void {
    let queue = this.queues.get(key);
    if (!queue) {
      this.queues.set(key, (queue = { items: [], head: 0, deficit: 0 }));
      this.ring.push(key);
    }
    queue.items.push(item);
    this.count++;
  }

  /** The next item by the round robin, and its key; undefined when nothing waits. */
  shift(): { key: string; item: T } | undefined {
    while (this.ring.length > 0) {
      if (this.turn >= this.ring.length) this.turn = 0;
      const key = this.ring[this.turn]!;
      const queue = this.queues.get(key)!;
      if (!this.credited) {
        queue.deficit += this.weightOf(key);
        this.credited = true;
      }
      if (queue.deficit >= 1) {
        queue.deficit -= 1;
        const item = queue.items[queue.head++]!;
        this.count--;
        if (queue.head === queue.items.length) {
          // Empty: the key leaves the ring and keeps no credit (an idle key saves up nothing).
          this.queues.delete(key);
          this.ring.splice(this.turn, 1);
          this.credited = false;
        } else if (queue.head > 1_024 && queue.head * 2 > queue.items.length) {
          queue.items = queue.items.slice(queue.head);
          queue.head = 0;
        }
        return { key, item };
      }
      this.credited = false;
      this.turn++;
    }
    return undefined;
  }

  /** Takes every waiting item out (a shutdown), in no particular order. */
  drain(): T[] {
    const all = [...this.queues.values()].flatMap((q) => q.items.slice(q.head));
    this.queues.clear();
    this.ring.length = 0;
    this.turn = 0;
    this.credited = false;
    this.count = 0;
    return all;
  }
}

import type { Collection, Filter } from "mongodb";
import { RUNNABLE_RUN_STATUSES } from "../domain/run-status.js";
import type { TaskDocument } from "./mongo-task-documents.js";
import type { AcquiredLease, LeaseFence } from "./task-store.js";

/**
 * Task execution leases on the task head (`leaseOwner`, `leaseEpoch`, `leaseExpiresAt`): each operation is
 * one single-document update, so MongoDB's document atomicity is what makes one instance the winner.
 */
export class MongoTaskLeases {
  constructor(private readonly tasks: Collection<TaskDocument>) {}

  /** The head as it was before (one command): whether a holder left the lease without giving it back. */
  async acquire(taskId: string, owner: string, now: Date, expiresAt: Date): Promise<AcquiredLease | null> {
    const doc = await this.tasks.findOneAndUpdate(
      { _id: taskId, status: { $in: [...RUNNABLE_RUN_STATUSES] }, ...leaseFree(now, owner) },
      { $set: { leaseOwner: owner, leaseExpiresAt: expiresAt }, $inc: { leaseEpoch: 1 } },
      { returnDocument: "before", projection: { leaseOwner: 1, leaseEpoch: 1, leaseExpiresAt: 1 } },
    );
    if (!doc) return null;
    return {
      owner,
      epoch: (doc.leaseEpoch ?? 0) + 1,
      expiresAt: expiresAt.toISOString(),
      unreleased: !!doc.leaseOwner && !!doc.leaseExpiresAt,
    };
  }

  async renew(owner: string, taskIds: string[], expiresAt: Date): Promise<number> {
    if (taskIds.length === 0) return 0;
    const result = await this.tasks.updateMany(
      { _id: { $in: taskIds }, leaseOwner: owner },
      { $set: { leaseExpiresAt: expiresAt } },
    );
    return result.matchedCount;
  }

  async release(taskId: string, owner: string, epoch: number): Promise<void> {
    await this.tasks.updateOne(
      { _id: taskId, leaseOwner: owner, leaseEpoch: epoch },
      { $set: { leaseOwner: null, leaseExpiresAt: null } },
    );
  }

  async leaseable(now: Date, owner: string, limit: number): Promise<string[]> {
    const docs = await this.tasks
      .find(
        {
          status: { $in: [...RUNNABLE_RUN_STATUSES] },
          $and: [leaseFree(now, owner), { $or: [{ timerDueAt: null }, { timerDueAt: { $lte: now } }] }],
        },
        { projection: { _id: 1 } },
      )
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  async cancelling(taskIds: string[]): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const docs = await this.tasks
      .find({ _id: { $in: taskIds }, status: "cancelling" }, { projection: { _id: 1 } })
      .toArray();
    return docs.map((d) => d._id);
  }

  /** Moves a due timer past `retryAt`; only the one instance whose update matched fires it. */
  async claimTimer(taskId: string, now: Date, retryAt: Date): Promise<boolean> {
    const result = await this.tasks.updateOne(
      { _id: taskId, timerDueAt: { $lte: now } },
      { $set: { timerDueAt: retryAt } },
    );
    return result.modifiedCount === 1;
  }
}

/** Whether a head read after a refused fenced commit still carries the fence's lease. */
export function fenceHolds(head: Pick<TaskDocument, "leaseOwner" | "leaseEpoch"> | null, fence: LeaseFence): boolean {
  return head?.leaseOwner === fence.owner && head.leaseEpoch === fence.epoch;
}

/**
 * No lease (never leased, released), an expired one, or one of this owner id's that this process does not
 * hold: a restart with the same INSTANCE_ID takes its tasks back at once instead of waiting for the TTL.
 */
function leaseFree(now: Date, owner: string): Filter<TaskDocument> {
  return {
    $or: [{ leaseOwner: null }, { leaseExpiresAt: null }, { leaseExpiresAt: { $lte: now } }, { leaseOwner: owner }],
  };
}

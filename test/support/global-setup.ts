// Placeholder: replaced by the MongoDB backend selection (see test/support/mongo.ts).
export default async function setup(): Promise<void> {}

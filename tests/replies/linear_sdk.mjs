// Linear's own SDK (@linear/sdk) against the Linear stand-in: creates a comment and edits it,
// and prints what the SDK made of the answers, one JSON object. Arguments: apiUrl apiKey issueId.
import { LinearClient } from "@linear/sdk";

const [apiUrl, apiKey, issueId] = process.argv.slice(2);
const client = new LinearClient({ apiKey, apiUrl });
const created = await client.createComment({ issueId, body: "from the sdk" });
const commentId = created.commentId;
const updated = await client.updateComment(commentId, { body: "edited by the sdk" });
let refused = null;
try {
  await client.createComment({ issueId: "no-such-issue", body: "x" });
} catch (error) {
  refused = { type: error.type, message: error.message };
}
console.log(JSON.stringify({
  created: { success: created.success, commentId, lastSyncId: created.lastSyncId },
  updated: { success: updated.success, commentId: updated.commentId },
  refused,
}));

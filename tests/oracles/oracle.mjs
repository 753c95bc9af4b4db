// Vendor webhook libraries as test oracles for gateway/signatures: reads a JSON list of requests
// on stdin, answers a JSON list of results on stdout, one per request, in order.
//   {"op": "github_sign", "secret", "payload"}             -> {"signature"}
//   {"op": "github_verify", "secret", "payload", "signature"} -> {"valid"}
//   {"op": "linear_verify", "secret", "body_base64", "signature", "now_ms"} -> {"valid", "error"}
//   {"op": "standardwebhooks_verify", "secret", "body", "headers"} -> {"valid", "payload", "error"}
// (`payload` is text, signed as its UTF-8 bytes, as @octokit/webhooks-methods takes it.)
import { sign, verify } from "@octokit/webhooks-methods";
import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { Webhook } from "standardwebhooks";

const realNow = Date.now;

async function answer(request) {
  switch (request.op) {
    case "github_sign":
      return { signature: await sign(request.secret, request.payload) };
    case "github_verify":
      return { valid: await verify(request.secret, request.payload, request.signature) };
    case "linear_verify": {
      // the SDK reads the clock itself: hold it at the request's instant
      Date.now = () => request.now_ms;
      try {
        const client = new LinearWebhookClient(request.secret);
        const body = Buffer.from(request.body_base64, "base64");
        return { valid: client.verify(body, request.signature), error: null };
      } catch (error) {
        return { valid: false, error: String(error.message) };
      } finally {
        Date.now = realNow;
      }
    }
    case "standardwebhooks_verify":
      // the npm package of Standard Webhooks, as a subscriber written in JavaScript verifies
      try {
        const payload = new Webhook(request.secret).verify(request.body, request.headers);
        return { valid: true, payload, error: null };
      } catch (error) {
        return { valid: false, payload: null, error: String(error.message) };
      }
    default:
      throw new Error(`unknown op ${request.op}`);
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const requests = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = [];
for (const request of requests) results.push(await answer(request));
process.stdout.write(JSON.stringify(results));

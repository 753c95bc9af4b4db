// The official TypeScript client (oz-agent-sdk on npm), unchanged, driving a served gateway:
// every method of its surface with realistic inputs, asserting on the results it parses.
// Run by tests/clients/test_typescript_client.py, which serves the gateway and passes:
//   OZ_API_BASE_URL  the gateway's /api/v1       WARP_API_KEY  a user key of the team
//   TEAM_UID         the team (X-Service-Team-Uid: the demo user may be in several teams)
// Prints one JSON object: what each method answered, for the Python side to check too.
import assert from "node:assert/strict";
import OzAPI, { BadRequestError } from "oz-agent-sdk";

const client = new OzAPI({
  maxRetries: 0,
  defaultHeaders: { "X-Service-Team-Uid": process.env.TEAM_UID },
});
const seen = {};
const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").toString("base64");

// --- agent.list: the skills runs can be started from -----------------------------------------
const skills = await client.agent.list({ repo: "acme/web", sort_by: "name", refresh: true });
assert.deepEqual(skills.agents.map((skill) => skill.name), ["deploy", "review"]);
const review = skills.agents[1].variants[0];
assert.equal(review.id, "acme/web:.agents/skills/review/SKILL.md");
assert.deepEqual(review.source, { owner: "acme", name: "web", skill_path: ".agents/skills/review/SKILL.md" });
assert.deepEqual(review.environments, [{ uid: "web", name: "Web app" }]);
seen.skills = skills.agents.map((skill) => skill.name);

// --- agent.run: POST /agent/run --------------------------------------------------------------
const started = await client.agent.run({
  prompt: "Make the landing page load faster",
  title: "Landing page speed",
  config: { model_id: "gpt-5", environment_id: "web", name: "perf" },
  images: [{ data: PNG, mime_type: "image/png" }],
  team: true,
});
assert.equal(started.state, "QUEUED");
assert.equal(started.task_id, started.run_id);
const fromSkill = await client.agent.run({ skill: "acme/web:deploy" });
await assert.rejects(client.agent.run({ prompt: "p", team: false }), BadRequestError);

// --- agent.runs: retrieve, list, cancel -------------------------------------------------------
const run = await client.agent.runs.retrieve(started.run_id);
assert.equal(run.title, "Landing page speed");
assert.equal(run.state, "QUEUED");
assert.equal(run.agent_config.model_id, "gpt-5");
assert.equal(run.creator.type, "user");
assert.match(run.created_at, /Z$/);
const skilled = await client.agent.runs.retrieve(fromSkill.run_id);
assert.equal(skilled.agent_config.skill_spec, "acme/web:deploy");
assert.equal(skilled.agent_config.name, "deploy");

const listed = await client.agent.runs.list({ state: ["QUEUED"], model_id: "gpt-5", limit: 1 });
assert.deepEqual(listed.runs.map((item) => item.run_id), [started.run_id]);
assert.equal(listed.page_info.has_next_page, false);
const byName = await client.agent.runs.list({ name: "deploy", q: "" });
assert.deepEqual(byName.runs.map((item) => item.run_id), [fromSkill.run_id]);

const cancelled = await client.agent.runs.cancel(fromSkill.run_id);
assert.equal(cancelled, fromSkill.run_id); // the bare id, as the client hands it over
assert.equal((await client.agent.runs.retrieve(fromSkill.run_id)).state, "CANCELLED");
seen.run = { run_id: run.run_id, artifacts: run.artifacts, cancelled };

// --- agent.schedules --------------------------------------------------------------------------
const schedule = await client.agent.schedules.create({
  name: "Weekly audit",
  cron_schedule: "0 6 * * 1",
  prompt: "Audit the dependencies.",
  agent_config: { model_id: "gpt-5", environment_id: "web" },
  enabled: true,
});
assert.equal(schedule.enabled, true);
assert.equal(schedule.agent_config.model_id, "gpt-5");
assert.equal((await client.agent.schedules.retrieve(schedule.id)).name, "Weekly audit");
const updated = await client.agent.schedules.update(schedule.id, {
  name: "Weekly audit",
  cron_schedule: "0 7 * * 1",
  enabled: true,
  prompt: "Audit the dependencies and licences.",
});
assert.equal(updated.cron_schedule, "0 7 * * 1");
assert.equal((await client.agent.schedules.pause(schedule.id)).enabled, false);
assert.equal((await client.agent.schedules.resume(schedule.id)).enabled, true);
const schedules = await client.agent.schedules.list();
assert.deepEqual(schedules.schedules.map((item) => item.id), [schedule.id]);
assert.deepEqual(await client.agent.schedules.delete(schedule.id), { success: true });
assert.deepEqual((await client.agent.schedules.list()).schedules, []);
seen.schedule = { id: schedule.id, history: updated.history ?? null };

console.log(JSON.stringify(seen));

"""The console's path through a provider connection, on SQLite and PostgreSQL: a real GitHub
payload (@octokit/webhooks-examples) makes a delivery, whose page names the automation that
matched and links its run; the run's page links the work item, whose page links back to the
delivery and lists the mention that continued it, whose own page lists that follow-up; the board
shows it by stage; the factory's activity charts count the delivery and the run."""

from __future__ import annotations

from tests.connections import signing
from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    evaluated,
    runs,
    set_repositories,
    trigger,
)
from tests.connections.test_work_items import mention, work_items
from tests.console.test_console_pages import login
from tests.providers.conftest import GithubExamples
from tests.support import World


def test_a_github_issue_from_delivery_to_work_item_and_back(
    world: World, github_examples: GithubExamples
) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    triage = automation(world, world.factory_uid, "triage", trigger("github", "issue_created"))
    made = connect(world, "github")
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    first = deliver(gw, made, signing.github(made["secret"], "issues", opened, "gh-open"))
    evaluated(world, made, first)
    (run,) = runs(gw, first)
    (item,) = work_items(world)
    comment = mention(github_examples, "@fa please add a regression test as well")
    second = deliver(gw, made, signing.github(made["secret"], "issue_comment", comment, "gh-c1"))
    evaluated(world, made, second)
    login(gw, world.user_key)

    delivery_path = f"/console/p/{made['uid']}/d/{first}"
    delivery = gw.get(delivery_path).text
    assert f'<span title="{triage}">triage</span>' in delivery
    assert f'href="/console/runs/{run.run_id}"' in delivery
    item_path = f"/console/f/{world.factory_uid}/work-items/{item['id']}"
    named_item = f'href="{item_path}" title="{item["id"]}">Codertocat/Hello-World#1</a>'
    assert named_item in delivery  # by its source, the id on hover

    # the mention started no run: its page lists where it went instead
    followed = gw.get(f"/console/p/{made['uid']}/d/{second}").text
    follow_ups = followed.split("<h2>Follow-ups</h2>")[1].split("</table>")[0]
    assert f'href="{item_path}"' in follow_ups
    assert f'href="/console/runs/{run.run_id}"' in follow_ups
    assert "<h2>Follow-ups</h2>" not in delivery

    run_page = gw.get(f"/console/runs/{run.run_id}").text
    assert named_item in run_page and f'href="{delivery_path}"' in run_page

    page = gw.get(item_path)
    assert page.status_code == 200
    assert "Codertocat/Hello-World#1" in page.text and "TRIAGE" in page.text
    assert f'href="/console/runs/{run.run_id}"' in page.text
    assert f'href="{delivery_path}"' in page.text  # the delivery that made it
    assert f'href="/console/p/{made["uid"]}/d/{second}"' in page.text  # the mention

    board = gw.get(f"/console/f/{world.factory_uid}/work-items").text
    triage_column = board.split('id="stage-triage"')[1].split("</section>")[0]
    assert f'href="{item_path}"' in triage_column and "1 follow-up" in triage_column

    activity = gw.get(f"/console/f/{world.factory_uid}/activity").text
    assert "<svg" in activity and "Evaluator lag" in activity
    assert "matched: 1" in activity and "QUEUED: 1" in activity
    assert "matched: 1" in gw.get(f"/console/f/{world.factory_uid}/activity?window=day").text

    factory = gw.get(f"/console/f/{world.factory_uid}").text
    assert f'title="{triage}">triage' in factory and "No webhook: this factory" in factory

from __future__ import annotations

import base64
import dataclasses

import pytest

from gateway.kernel.settings import DEFAULTS, SettingsError, load_settings

KEY = base64.urlsafe_b64encode(b"x" * 32).decode()


def settings(**env: str):  # type: ignore[no-untyped-def]
    return load_settings({"GATEWAY_SECRET_KEY": KEY, **{f"GATEWAY_{k}": v for k, v in env.items()}})


def test_defaults_are_the_embedded_setup() -> None:
    s = settings()
    assert s.database_url == "sqlite+aiosqlite:///./data/gateway.db"
    assert s.redis_url is None and not s.uses_redis
    assert s.role == "all" and s.serves_api and s.serves_ingress
    assert s.secret_key == b"x" * 32


def test_an_empty_environment_takes_every_default_of_the_settings_type() -> None:
    """The defaults are written once, on `Settings`: nothing unset is decided elsewhere (the
    evaluator's mode and priority once disagreed with the type's)."""
    loaded = dataclasses.replace(settings(), secret_key=DEFAULTS.secret_key)
    assert loaded == DEFAULTS
    assert (loaded.evaluator, loaded.evaluator_priority) == ("process", "normal")
    assert not loaded.evaluator_idle_cgroup
    assert loaded.sqlite_synchronous == "full"


def test_a_store_may_trade_its_commits_durability_for_speed() -> None:
    assert settings(SQLITE_SYNCHRONOUS="NORMAL").sqlite_synchronous == "normal"
    assert settings(SQLITE_SYNCHRONOUS="full").sqlite_synchronous == "full"


def test_a_server_other_than_uvicorn_is_refused() -> None:
    with pytest.raises(SettingsError, match="GATEWAY_SERVER='granian': uvicorn is the only"):
        settings(SERVER="granian")
    assert settings(SERVER="uvicorn").header_timeout == 10.0


def test_header_deadline() -> None:
    assert settings().header_timeout == 10.0
    assert settings(HEADER_TIMEOUT="2.5").header_timeout == 2.5


def test_postgres_and_redis_urls() -> None:
    s = settings(DATABASE_URL="postgresql://u@h:5432/db", REDIS_URL="redis://h:6379/0")
    assert s.database_url == "postgresql+asyncpg://u@h:5432/db"
    assert s.uses_redis


def test_redis_cluster_needs_a_tcp_node_url() -> None:
    assert not settings(REDIS_URL="redis://h:6379/0").redis_cluster
    assert settings(REDIS_URL="redis://h:7000/0", REDIS_CLUSTER="1").redis_cluster
    for env in ({"REDIS_CLUSTER": "1"}, {"REDIS_URL": "unix:///r.sock", "REDIS_CLUSTER": "1"}):
        with pytest.raises(SettingsError, match="GATEWAY_REDIS_CLUSTER"):
            settings(**env)
    with pytest.raises(SettingsError, match="GATEWAY_REDIS_CLUSTER must be 0 or 1"):
        settings(REDIS_URL="redis://h:7000/0", REDIS_CLUSTER="yes")


def test_evaluator_runs_in_a_process_of_its_own_unless_the_store_is_in_memory() -> None:
    embedded = settings()
    assert embedded.evaluator == "process"
    redis = settings(REDIS_URL="redis://h:6379/0")
    assert redis.evaluator == "process"
    assert settings(REDIS_URL="redis://h", EVALUATOR="inline").evaluator == "inline"
    assert settings(EVALUATOR="off", EVALUATOR_PRIORITY="Low").evaluator_priority == "low"
    # another process cannot read an in-memory database: inline only
    for memory in ("sqlite://", "sqlite:///:memory:", "sqlite:///file:x?mode=memory&uri=true"):
        assert settings(DATABASE_URL=memory).evaluator == "inline"
        with pytest.raises(SettingsError, match="GATEWAY_EVALUATOR='process'"):
            settings(DATABASE_URL=memory, EVALUATOR="process")
    # ...unless the deliveries wait in Redis
    assert settings(DATABASE_URL="sqlite://", REDIS_URL="redis://h").evaluator == "process"


def test_roles_select_planes() -> None:
    assert not settings(ROLE="ingress").serves_api
    assert not settings(ROLE="api").serves_ingress


def test_trusted_proxies_parse_as_networks() -> None:
    s = settings(TRUSTED_PROXIES="10.0.0.0/8, 127.0.0.1")
    assert [str(n) for n in s.trusted_proxies] == ["10.0.0.0/8", "127.0.0.1/32"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DATABASE_URL", "mysql://x"),
        ("REDIS_URL", "http://x"),
        ("ROLE", "everything"),
        ("TRUSTED_PROXIES", "not-an-ip"),
        ("BODY_TIMEOUT", "-1"),
        ("BODY_TIMEOUT", "soon"),
        ("AUTH_FAILURE_LIMIT", "0"),
        ("EVALUATOR", "sometimes"),
        ("EVALUATOR_PRIORITY", "urgent"),
        ("SQLITE_SYNCHRONOUS", "off"),
        ("MAX_BACKLOG", "0"),
        ("MAX_BACKLOG", "many"),
        ("LOG_LEVEL", "loud"),
        ("WEBHOOK_BASE_URL", "ftp://x"),
        ("SECRET_KEY", "short"),
        ("HEADER_TIMEOUT", "0"),
        ("HEADER_TIMEOUT", "61"),
        ("MODELS", "not: [json"),
        ("MODELS", "[]"),
        ("MODELS", '[{"id": "m"}]'),
        ("MODELS", '[{"id": "m", "display_name": "M", "provider": "p", "colour": 1}]'),
        ("MODELS", '[{"id": "m", "display_name": "M", "provider": "p", "disabled": true}]'),
        ("MODELS_FILE", "/nonexistent/models.json"),
        ("ENVIRONMENTS", '[{"uid": "e", "name": "E"}]'),
        ("ENVIRONMENTS", '[{"uid": "e", "name": "E", "link_shared": true, "last_updated": "x"}]'),
    ],
)
def test_invalid_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"GATEWAY_SECRET_KEY": KEY, f"GATEWAY_{name}": value})
    assert f"GATEWAY_{name}" in str(caught.value)


def test_secret_key_value_is_never_echoed() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"GATEWAY_SECRET_KEY": "c2hvcnQtc2VjcmV0"})
    assert "c2hvcnQtc2VjcmV0" not in str(caught.value)


def test_embedded_secret_key_is_created_once(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    first = load_settings({}).secret_key
    assert len(first) == 32
    assert load_settings({}).secret_key == first
    assert (tmp_path / "data" / "secret.key").stat().st_mode & 0o077 == 0


def _models(*entries: dict[str, object]) -> str:
    import json

    return json.dumps([{"display_name": "M", "provider": "p", **entry} for entry in entries])


def test_models_default_to_the_built_in_list_and_can_be_configured() -> None:
    from gateway.kernel.catalog import BUILTIN_ENVIRONMENTS, BUILTIN_MODELS

    assert settings().models == BUILTIN_MODELS and settings().environments == BUILTIN_ENVIRONMENTS
    assert sum(m.default for m in BUILTIN_MODELS) == 1
    listed = settings(MODELS=_models({"id": "a", "disabled": True}, {"id": "b"}))
    assert [(m.id, m.default, m.disabled) for m in listed.models] == [
        ("a", False, True),
        ("b", True, False),  # without a default, the first enabled model is
    ]
    two = _models({"id": "a", "default": True}, {"id": "b", "default": True})
    with pytest.raises(SettingsError, match=r"GATEWAY_MODELS=.*\[1\]\.default"):
        settings(MODELS=two)
    with pytest.raises(SettingsError, match=r"\[1\]\.id: 'a' appears twice"):
        settings(MODELS=_models({"id": "a"}, {"id": "a"}))
    off = _models({"id": "a", "default": True, "disabled": True}, {"id": "b"})
    with pytest.raises(SettingsError, match="must not be disabled"):
        settings(MODELS=off)


def test_lists_come_from_files_in_json_or_yaml(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    models = tmp_path / "models.yaml"
    models.write_text("- {id: m, display_name: M, provider: p}\n")
    environments = tmp_path / "environments.json"
    environments.write_text('[{"uid": "e", "name": "E", "team_uid": "team_1"}]')
    os.utime(environments, (1_700_000_000, 1_700_000_000))
    s = settings(MODELS_FILE=str(models), ENVIRONMENTS_FILE=str(environments))
    assert [m.id for m in s.models] == ["m"]
    (environment,) = s.environments
    assert environment.team_uid == "team_1" and not environment.link_shared
    assert environment.last_updated is not None
    assert environment.last_updated.timestamp() == 1_700_000_000  # the file's age
    with pytest.raises(SettingsError, match="not both"):
        settings(MODELS="[]", MODELS_FILE=str(models))


def test_evaluator_priority_is_normal_on_every_backend_unless_lowered_on_purpose() -> None:
    # idle or low starve the evaluator on a host where other work wants the CPU
    assert settings().evaluator_priority == "normal"
    assert settings(REDIS_URL="redis://h:6379/0").evaluator_priority == "normal"
    assert settings(DATABASE_URL="postgresql://u@h/db").evaluator_priority == "normal"
    assert settings(EVALUATOR_PRIORITY="idle").evaluator_priority == "idle"
    assert settings(REDIS_URL="redis://h", EVALUATOR_PRIORITY="low").evaluator_priority == "low"


def test_the_idle_cgroup_is_made_only_when_the_operator_asks_for_it() -> None:
    """The gateway writes the host's cgroup tree only on GATEWAY_EVALUATOR_IDLE_CGROUP=1."""
    assert not settings(REDIS_URL="redis://h", EVALUATOR_PRIORITY="idle").evaluator_idle_cgroup
    asked = settings(REDIS_URL="redis://h", EVALUATOR_PRIORITY="idle", EVALUATOR_IDLE_CGROUP="1")
    assert asked.evaluator_idle_cgroup
    assert not settings(EVALUATOR_IDLE_CGROUP="0").evaluator_idle_cgroup
    with pytest.raises(SettingsError, match="GATEWAY_EVALUATOR_IDLE_CGROUP='1': needs GATEWAY"):
        settings(EVALUATOR_IDLE_CGROUP="1")  # the cgroup is idle priority's
    with pytest.raises(SettingsError, match="GATEWAY_EVALUATOR_IDLE_CGROUP='yes': expected 0 or 1"):
        settings(EVALUATOR_PRIORITY="idle", EVALUATOR_IDLE_CGROUP="yes")


def test_log_format_is_text_or_json() -> None:
    assert settings().log_format == "text"
    assert settings(LOG_FORMAT="JSON").log_format == "json"
    with pytest.raises(SettingsError, match="GATEWAY_LOG_FORMAT"):
        settings(LOG_FORMAT="xml")


def test_the_public_url_defaults_to_the_webhook_base_url() -> None:
    base = {"GATEWAY_WEBHOOK_BASE_URL": "https://hooks.example.com/"}
    assert load_settings(base).console_base_url == "https://hooks.example.com"
    split = load_settings({**base, "GATEWAY_PUBLIC_URL": "https://gateway.example.com/"})
    assert split.console_base_url == "https://gateway.example.com"
    with pytest.raises(SettingsError, match="GATEWAY_PUBLIC_URL"):
        load_settings({"GATEWAY_PUBLIC_URL": "gateway.example.com"})

"""Settings once (issue 15): every service's settings derive from `ZocratesSettings`, read the
environment, `.env` and `zocrates.toml` the same way, and a shared setting set once is seen
by every service."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from zocrates_discovery.config import DiscoverySettings
from zocrates_gateway.config import GatewaySettings
from zocrates_retrieval.config import RetrievalSettings
from zocrates_runtime.settings import ZocratesSettings
from zocrates_staging.config import StagingSettings
from zocrates_verifier.config import VerifierSettings

SERVICES = (GatewaySettings, RetrievalSettings, VerifierSettings, DiscoverySettings, StagingSettings)


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """An empty working directory (no .env, no zocrates.toml), no ZOCRATES_* variables, and a
    home without Zotero."""
    for name in list(os.environ):
        if name.startswith("ZOCRATES_") or name == "OPENROUTER_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    zotero = tmp_path / "zotero"
    zotero.mkdir()
    (zotero / "zotero.sqlite").write_bytes(b"")  # retrieval checks that it is there
    return tmp_path


def shared_values(root: Path) -> dict[str, tuple[str, object]]:
    """Every shared setting: (its value as written in a file or variable, what a service sees)."""
    return {
        "mode": ("hosted", "hosted"),
        "nats_url": ("nats://bus.example:4222", "nats://bus.example:4222"),
        "nats_user": ("zocrates", "zocrates"),
        "nats_password": ("s3cret", "s3cret"),
        "nats_creds_file": (str(root / "bus.creds"), root / "bus.creds"),
        "stream_replicas": ("3", 3),
        "data_dir": (str(root / "state"), root / "state"),
        "log_level": ("DEBUG", "DEBUG"),
        "log_json": ("true", True),
        "otlp_endpoint": ("http://otel.example:4318", "http://otel.example:4318"),
        "instance_id": ("replica-7", "replica-7"),
        "instance_file": (str(root / "instance"), root / "instance"),
        "local_user_id": ("alice", "alice"),
        "zotero_dir": (str(root / "zotero"), root / "zotero"),
    }


#: Hosted mode also needs the gateway's own pepper; it is not a shared setting.
PEPPER = ("ZOCRATES_TOKEN_PEPPER", "a-long-random-secret")


def seen(settings: ZocratesSettings, name: str) -> object:
    value = getattr(settings, name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def test_every_service_settings_class_derives_from_the_runtime_base():
    for cls in SERVICES:
        assert issubclass(cls, ZocratesSettings), cls.__name__
        for name, field in ZocratesSettings.model_fields.items():
            assert repr(cls.model_fields[name]) == repr(field), f"{cls.__name__} redefines the shared {name}"


def test_the_shared_values_cover_every_shared_setting(here):
    assert set(shared_values(here)) == set(ZocratesSettings.model_fields)


def toml_literal(name: str, raw: str) -> str:
    if name == "stream_replicas":
        return raw
    if name == "log_json":
        return raw.lower()
    return f'"{raw}"'


@pytest.mark.parametrize("where", ["environment", ".env", "zocrates.toml"])
def test_each_shared_setting_set_once_is_seen_by_every_service(here, monkeypatch, where):
    values = shared_values(here)
    if where == "environment":
        for name, (raw, _) in values.items():
            monkeypatch.setenv(f"ZOCRATES_{name.upper()}", raw)
        monkeypatch.setenv(*PEPPER)
    elif where == ".env":
        lines = [f"ZOCRATES_{name.upper()}={raw}" for name, (raw, _) in values.items()]
        (here / ".env").write_text("\n".join([*lines, "=".join(PEPPER)]) + "\n")
    else:
        lines = [f"{name} = {toml_literal(name, raw)}" for name, (raw, _) in values.items()]
        (here / "zocrates.toml").write_text("\n".join([*lines, f'token_pepper = "{PEPPER[1]}"']) + "\n")

    for cls in SERVICES:
        settings = cls()
        for name, (_, expected) in values.items():
            assert seen(settings, name) == expected, f"{cls.__name__}.{name} from {where}"


@pytest.mark.parametrize("old_name", ["ZOCRATES_RETRIEVAL_LOCAL_USER_ID", "ZOCRATES_DISCOVERY_LOCAL_USER_ID"])
def test_an_older_service_prefixed_name_still_sets_the_shared_setting_for_every_service(here, monkeypatch, old_name):
    # It used to set the library's owner in one service only, not the token's user.
    monkeypatch.setenv(old_name, "bob")
    assert {cls.__name__: cls().local_user_id for cls in SERVICES} == {cls.__name__: "bob" for cls in SERVICES}


def test_the_shared_name_wins_over_an_older_one(here, monkeypatch):
    monkeypatch.setenv("ZOCRATES_RETRIEVAL_ZOTERO_DIR", str(here / "elsewhere"))
    monkeypatch.setenv("ZOCRATES_ZOTERO_DIR", str(here / "zotero"))
    assert RetrievalSettings().zotero_dir == DiscoverySettings().zotero_dir == here / "zotero"


def test_a_services_own_setting_is_read_from_dotenv_and_from_its_toml_table(here, monkeypatch):
    (here / "zocrates.toml").write_text(
        'data_dir = "from-toml"\ntop_k = 7\n\n[retrieval]\nchunk_tokens = 100\n\n'
        '[discovery]\nhttp_timeout_s = 3.5\n\n[staging]\nconcurrency = 2\n\n[verifier]\nmax_batch_pairs = 16\n'
    )
    settings = RetrievalSettings()
    assert (settings.chunk_tokens, settings.data_dir) == (100, Path("from-toml"))
    assert DiscoverySettings().http_timeout_s == 3.5
    assert StagingSettings().concurrency == 2
    assert VerifierSettings().max_batch_pairs == 16
    assert GatewaySettings().top_k == 7

    # .env beats the TOML file, the environment beats .env
    (here / ".env").write_text("ZOCRATES_RETRIEVAL_CHUNK_TOKENS=120\nZOCRATES_DATA_DIR=from-dotenv\n")
    settings = RetrievalSettings()
    assert (settings.chunk_tokens, settings.data_dir) == (120, Path("from-dotenv"))
    monkeypatch.setenv("ZOCRATES_RETRIEVAL_CHUNK_TOKENS", "140")
    assert RetrievalSettings().chunk_tokens == 140


def test_a_top_level_toml_key_sets_no_services_own_setting_of_that_name(here):
    # `http_timeout_s` at the top level would be the gateway's ZOCRATES_HTTP_TIMEOUT_S (none),
    # not discovery's ZOCRATES_DISCOVERY_HTTP_TIMEOUT_S.
    (here / "zocrates.toml").write_text("http_timeout_s = 3.5\nconcurrency = 9\n")
    assert DiscoverySettings().http_timeout_s == DiscoverySettings.model_fields["http_timeout_s"].default
    assert StagingSettings().concurrency == StagingSettings.model_fields["concurrency"].default


def test_a_shared_setting_in_a_service_table_is_refused_with_a_hint(here):
    (here / "zocrates.toml").write_text('[retrieval]\ndata_dir = "x"\n')
    with pytest.raises(ValueError, match=r"data_dir in \[retrieval\] is shared by every service"):
        RetrievalSettings()


def test_hosted_mode_from_the_toml_file_keeps_every_service_off_the_demo_library(here):
    (here / "zocrates.toml").write_text('mode = "hosted"\nnats_user = "zocrates"\n')
    assert RetrievalSettings().zotero_dir is None and DiscoverySettings().zotero_dir is None


def test_every_service_refuses_hosted_mode_without_nats_credentials(here, monkeypatch):
    monkeypatch.setenv("ZOCRATES_MODE", "hosted")
    for cls in SERVICES:
        with pytest.raises(ValidationError, match="hosted mode needs NATS credentials"):
            cls()


def test_one_environment_variable_names_one_setting():
    """Each service reads its own fields under its prefix: no two classes may answer to the same
    variable (ZOCRATES_DISCOVERY_TIMEOUT_S once set both the gateway's turn deadline and the
    discovery service's HTTP timeout)."""
    owners: dict[str, set[str]] = {}
    for cls in (GatewaySettings, RetrievalSettings, DiscoverySettings, StagingSettings, VerifierSettings):
        prefix = cls.model_config.get("env_prefix", "")
        for name, field in cls.model_fields.items():
            if name in ZocratesSettings.model_fields:
                continue  # shared: one definition, read by every service
            owners.setdefault(f"{prefix}{name}".upper(), set()).add(cls.__name__)
    assert {var: cls for var, cls in owners.items() if len(cls) > 1} == {}

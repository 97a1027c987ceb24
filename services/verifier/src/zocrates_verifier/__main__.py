from zocrates_runtime.service import run
from zocrates_verifier.app import create_app

if __name__ == "__main__":
    run("verifier", create_app)

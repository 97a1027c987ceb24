from zocrates_runtime.service import run
from zocrates_staging.app import create_app

if __name__ == "__main__":
    run("staging", create_app)

from zocrates_staging.app import create_app
from zocrates_runtime.service import run

if __name__ == "__main__":
    run("staging", create_app)

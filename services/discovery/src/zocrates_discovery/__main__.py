from zocrates_discovery.app import create_app
from zocrates_runtime.service import run

if __name__ == "__main__":
    run("discovery", create_app)

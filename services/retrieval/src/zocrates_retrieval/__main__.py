from zocrates_retrieval.app import create_app
from zocrates_runtime.service import run

if __name__ == "__main__":
    run("retrieval", create_app)

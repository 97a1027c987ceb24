"""OpenAlex's two kinds of 429, as its API proxy writes them (see DESIGN.md, "Discovery facts")."""

import httpx

#: OpenAlex's budget-exhausted answer, as its API proxy writes it (DESIGN.md).
BUDGET_429 = httpx.Response(
    429,
    headers={
        "Retry-After": "21946",
        "X-RateLimit-Limit": "1000",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Credits-Required": "10",
        "X-RateLimit-Reset": "21946",
    },
    json={
        "error": "Rate limit exceeded",
        "message": "Insufficient budget. This request costs $0.001 but you only "
        "have $0 remaining. Resets at midnight UTC. Need more? Add funds at https://openalex.org/pricing",
        "retryAfter": 21946,
        "creditsRequired": 10,
        "creditsRemaining": 0,
    },
)
#: OpenAlex's per-second throttle: a 429 with budget left.
THROTTLE_429 = httpx.Response(
    429,
    headers={"Retry-After": "0", "X-RateLimit-Remaining": "9000", "X-RateLimit-Credits-Required": "10"},
    json={"error": "Rate limit exceeded", "message": "Rate limit exceeded: 100 requests per second. Please slow down."},
)

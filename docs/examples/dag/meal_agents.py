async def greeter(context: dict) -> dict:
    return {"user_name": "Ada", "user_state": "hungry"}


async def meal(context: dict) -> dict:
    # the connection passes user_name and user_state only
    return {"meal": f"soup for {context['user_name']}", "meal_saw": sorted(context)}


async def glucose(context: dict) -> dict:
    return {"glucose": "normal"}


async def feedback(context: dict) -> dict:
    return {"feedback": f"{context['user_name']}: {context.get('meal', 'no meal')}"}

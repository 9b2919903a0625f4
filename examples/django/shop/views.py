"""The database-backed pages: what a small shop's front page does on each
request (three queries, a template, a session kept in a signed cookie, a
form with its CSRF token) and a JSON list of 20 rows, also as an async view
(served through ASGI). The database is the settings' (SQLite by default,
PostgreSQL with DJANGO_DB=postgresql)."""
from django.db.models import Avg, Count
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from shop.models import Category, Product


def page(request):
    if request.method == "POST":
        product = get_object_or_404(Product, pk=request.POST.get("product", "0"))
        basket = request.session.get("basket", [])
        request.session["basket"] = (basket + [product.pk])[-10:]
        return redirect("shop")
    # The session changes on each visit: the signed cookie is written anew.
    request.session["visits"] = request.session.get("visits", 0) + 1
    context = {
        "categories": Category.objects.annotate(count=Count("products")),
        "latest": Product.objects.select_related("category").order_by("-id")[:10],
        "totals": Product.objects.aggregate(count=Count("id"), average=Avg("price")),
        "visits": request.session["visits"],
        "basket": len(request.session.get("basket", [])),
    }
    return render(request, "shop/page.html", context)


def first_products():
    """The query of the JSON list (lazy: iterated, or async-iterated, by the view)."""
    return Product.objects.order_by("id").values("id", "name", "price", "stock", "category__name")[:20]


def product_list(rows):
    return JsonResponse({"products": [
        {"id": r["id"], "name": r["name"], "price": str(r["price"]), "stock": r["stock"],
         "category": r["category__name"]} for r in rows
    ]})


def products(request):
    return product_list(first_products())


async def products_async(request):
    """The same list through Django's async ORM: under ASGI the view runs
    on the event loop, and the query is handed to a thread by the ORM."""
    return product_list([r async for r in first_products()])

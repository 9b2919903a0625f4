"""The catalogue's rows: 8 categories, 200 products, the same on every
database (the tests and bench/django_pg count on them)."""
from decimal import Decimal

from django.db import migrations

CATEGORIES = ["Books", "Cables", "Garden", "Kitchen", "Lamps", "Music", "Tools", "Toys"]
PRODUCTS = 200


def seed(apps, schema_editor):
    Category = apps.get_model("shop", "Category")
    Product = apps.get_model("shop", "Product")
    categories = Category.objects.bulk_create([Category(name=n) for n in CATEGORIES])
    Product.objects.bulk_create([
        Product(category=categories[i % len(categories)], name=f"{categories[i % len(categories)].name} item {i + 1}",
                price=Decimal(100 + (i * 37) % 900) / 10, stock=(i * 13) % 50)
        for i in range(PRODUCTS)
    ])


def unseed(apps, schema_editor):
    apps.get_model("shop", "Category").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
